/** `agentloom validate` as a user runs it: a real process on the example files and on a file full of mistakes. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function validate(...args: string[]) {
  return spawnSync(process.execPath, ['bin/agentloom.js', 'validate', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: undefined },
    timeout: 60_000,
  });
}

const INVALID = 'test/fixtures/yaml/invalid-writer.yaml';

describe('agentloom validate', () => {
  it('accepts the writer example with a one-line summary and exit 0', () => {
    const result = validate('examples/writer.yaml');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^ok: examples\/writer\.yaml: 1 app: writer \(7 agents, definition [0-9a-f]{12}\); tool and model names not checked \(pass --registry MODULE\)$/,
      ),
    ]);
  });

  it('prints every problem of an invalid file as file:line:col: path: message and exits 1', () => {
    const result = validate(INVALID, '--registry', 'test/fixtures/yaml/registry.ts');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      `${INVALID}:7:17: agents[0].subAgents[0]: no agent named "reserch" in this app; did you mean "research"? Or define it under agents: or inline here`,
      `${INVALID}:11:17: agents[1].subAgents[0].name: "research-web" is not a valid agent name; use a JS identifier (letters, digits, _), e.g. "research_web"`,
      `${INVALID}:14:20: agents[2].maxIterations: maxIterations must be at most 100 in a declarative config; write e.g. maxIterations: 100`,
      `${INVALID}:16:63: agents[2].subAgents[0].outputky: unknown key "outputky" in LlmAgent; did you mean "outputKey"?`,
      `${INVALID}:17:85: agents[2].subAgents[1].tools[1]: tool "web_serch" is not registered; did you mean "web_search"? (or register it in code: createEngine({ tools: { web_serch: … } }))`,
      `5 problems in ${INVALID}`,
    ]);
    // Without the registry the tool name cannot be judged: the other four remain.
    const unchecked = validate(INVALID);
    expect(unchecked.status).toBe(1);
    expect(unchecked.stdout.trim().split('\n')).toHaveLength(5);
    expect(unchecked.stdout).not.toContain('web_serch');
  });

  it('accepts the kagent folder as one app; with a registry, an unregistered modelConfig is reported per manifest', () => {
    const plain = validate('examples/kagent');
    expect(plain.status).toBe(0);
    expect(plain.stdout).toMatch(
      /^ok: examples\/kagent: 1 app: code-development-pipeline \(5 agents, definition [0-9a-f]{12}\)/,
    );
    // The fixture registry has no "default-model-config": the manifests' modelConfig is reported, in each file.
    const strict = validate('examples/kagent', '--registry', 'test/fixtures/yaml/registry.ts');
    expect(strict.status).toBe(1);
    const lines = strict.stdout.trim().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe(
      'examples/kagent/agents.yaml:11:18: spec.declarative.modelConfig: model "default-model-config" is not registered; write a registered model (writer_model) or a Gemini id such as gemini-2.5-flash',
    );
    expect(lines.at(-1)).toBe('4 problems in examples/kagent');
  });

  it('exits 2 when the path does not exist', () => {
    const result = validate('examples/nothing-here.yaml');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('CONFIG: examples/nothing-here.yaml does not exist');
  });
});
