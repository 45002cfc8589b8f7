/**
 * Validation of agentloom's YAML format: every problem of a file is reported at once, as
 * `file:line:col: yaml.path: message`, at the key or value to change, with a message saying what to write
 * instead; nothing is constructed from an invalid file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkAppsYaml,
  formatProblem,
  loadAppsFromYaml,
  type Registries,
} from '../../src/config/apps/load-apps.js';
import { exitLoop, ScriptedModel, type AgentloomError } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-yaml-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Registered names: tool `search`, model `fast`. */
const registries: Registries = {
  tools: { search: exitLoop },
  models: { fast: new ScriptedModel({ respond: () => 'ok' }) },
};

function yamlFile(text: string): string {
  const path = join(dir, `app${files++}.yaml`);
  writeFileSync(path, text);
  return path;
}

/** The problems of `text` as printed, with the file shown as `F`. */
async function problems(text: string, with_: Registries = registries): Promise<string[]> {
  const path = yamlFile(text);
  const result = await checkAppsYaml(path, with_);
  if (result.problems.length > 0) expect(result.apps).toEqual([]);
  return result.problems.map((p) => formatProblem(p).replace(path, 'F'));
}

describe('YAML validation', () => {
  it('reports unknown keys at the key, suggesting the closest known key', async () => {
    expect(
      await problems(`app: a
agents:
  - name: writer
    model: fast
    instrution: Write
    colour: blue
`),
    ).toEqual([
      'F:5:5: agents[0].instrution: unknown key "instrution" in LlmAgent; did you mean "instruction"?',
      expect.stringMatching(
        /^F:6:5: agents\[0\]\.colour: unknown key "colour" in LlmAgent; write a known key: name, type, description, .*, disableTransfer$/,
      ),
    ]);
  });

  it('checks a RemoteA2aAgent: its agentCard URL, no sub-agents', async () => {
    expect(
      await problems(`app: a
agents:
  - name: remote
    type: RemoteA2aAgent
    agentCard: ftp://example.com/card
    subAgents: [x]
`),
    ).toEqual([
      "F:5:16: agents[0].agentCard: write agentCard as the agent's http(s) URL or its card's, e.g. agentCard: http://localhost:8080/a2a/writer",
      expect.stringMatching(/^F:6:5: agents\[0\]\.subAgents: unknown key "subAgents" in RemoteA2aAgent/),
      'F:6:17: agents[0].subAgents[0]: no agent named "x" in this app; define it under agents: or inline here',
    ]);
    expect(await problems('app: a\nagents:\n  - { name: remote, type: RemoteA2aAgent }\n')).toEqual([
      "F:3:5: agents[0].agentCard: missing; write agentCard: <the agent's URL or its card's>, e.g. agentCard: http://localhost:8080/a2a/writer",
    ]);
  });

  it('reports YAML syntax errors with their position', async () => {
    expect(await problems('app: a\nagents:\n  - name: writer\n    model: fast\n   bad: [1, 2\n')).toEqual([
      'F:5:1: (yaml): Sequence item without - indicator; fix the YAML syntax here',
      'F:6:1: (yaml): Flow sequence in block collection must be sufficiently indented and end with a ]; fix the YAML syntax here',
    ]);
  });

  it('reports a missing app name at the document', async () => {
    expect(await problems('agents:\n  - { name: writer, model: fast }\n')).toEqual([
      'F:1:1: app: missing; write app: <name>, e.g. app: writer',
    ]);
  });

  it('checks agent types, non-empty workflows and LoopAgent maxIterations', async () => {
    expect(
      await problems(`app: a
root: top
agents:
  - name: top
    type: Sequential
    subAgents: [writer]
  - name: writer
    type: LlmAgent
    model: fast
  - { name: loop, type: LoopAgent, subAgents: [], maxIterations: 0 }
`),
    ).toEqual([
      'F:5:11: agents[0].type: unknown agent type "Sequential"; did you mean "SequentialAgent"?',
      'F:10:47: agents[2].subAgents: a LoopAgent needs at least one sub-agent: list agent names of this app or inline definitions',
      'F:10:66: agents[2].maxIterations: maxIterations must be at least 1; write e.g. maxIterations: 5',
    ]);
  });

  it('checks agent names: JS identifiers, not "user", unique in the app', async () => {
    expect(
      await problems(`app: a
root: top
agents:
  - name: top
    type: SequentialAgent
    subAgents: [research-agent, user, top_two]
  - { name: research-agent, model: fast }
  - { name: user, model: fast }
  - { name: top_two, model: fast }
  - { name: top_two, model: fast }
`),
    ).toEqual([
      'F:7:13: agents[1].name: "research-agent" is not a valid agent name; use a JS identifier (letters, digits, _), e.g. "research_agent"',
      'F:8:13: agents[2].name: "user" is reserved for the end user; choose another agent name',
      'F:10:13: agents[4].name: agent "top_two" is already defined at line 9; names are unique in an app, rename one',
    ]);
  });

  it('checks references: the named agent exists and has one parent', async () => {
    expect(
      await problems(`app: a
root: top
agents:
  - name: top
    type: SequentialAgent
    subAgents: [writter, shared]
  - name: other
    type: ParallelAgent
    subAgents: [shared, { name: inner, model: fast }]
  - { name: writer, model: fast }
  - { name: shared, model: fast }
`),
    ).toEqual([
      'F:6:17: agents[0].subAgents[0]: no agent named "writter" in this app; did you mean "writer"? Or define it under agents: or inline here',
      'F:9:17: agents[1].subAgents[0]: agent "shared" is already a sub-agent of "top"; an agent has one parent, define a separate agent for "other"',
    ]);
  });

  it('checks ranges and types of options, inline definitions included', async () => {
    expect(
      await problems(`app: a
agents:
  - name: loop
    type: LoopAgent
    maxIterations: 101
    subAgents:
      - { name: step, model: fast, maxIterations: 2.5, includeContents: all, stream: 'yes', modelTimeoutMs: -1 }
`),
    ).toEqual([
      'F:5:20: agents[0].maxIterations: maxIterations must be at most 100 in a declarative config; write e.g. maxIterations: 100',
      'F:7:51: agents[0].subAgents[0].maxIterations: write maxIterations as a whole number ≥ 1 (model↔tool rounds, default 16)',
      'F:7:73: agents[0].subAgents[0].includeContents: write includeContents: default or includeContents: none',
      'F:7:86: agents[0].subAgents[0].stream: write stream: true or stream: false',
      'F:7:109: agents[0].subAgents[0].modelTimeoutMs: modelTimeoutMs must be a positive number of milliseconds, e.g. modelTimeoutMs: 120000',
    ]);
  });

  const namesFile = `app: a
root: top
agents:
  - name: top
    model: gemini-2.5-flash
    tools: [exit_loop, serch, search, search]
    subAgents: [a, b]
  - { name: a, model: fastt }
  - { name: b }
`;

  it('resolves tools and models from the registries; exit_loop and Gemini ids always resolve', async () => {
    expect(await problems(namesFile)).toEqual([
      'F:6:24: agents[0].tools[1]: unknown tool "serch" (known: exit_loop, search); did you mean "search"?',
      'F:6:39: agents[0].tools[3]: tool "search" is listed twice; remove one',
      'F:8:23: agents[1].model: unknown model "fastt" (known: fast, provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2); did you mean "fast"?',
      'F:9:5: agents[2]: no model given and none is registered as "default"; write model: <one of fast, or a provider id such as gemini-2.5-flash or openai/gpt-4.1>',
    ]);
    // Without registries only what every engine has is known (exit_loop, Gemini ids): an engine given no tools
    // or models could not run the others, so they are problems here as they are at load.
    const register = (name: string) =>
      `register it in code, createEngine({ tools: { ${name}: … } }), and name that module with validate --registry`;
    expect(await problems(namesFile, {})).toEqual([
      `F:6:24: agents[0].tools[1]: unknown tool "serch" (known: exit_loop); ${register('serch')}`,
      `F:6:31: agents[0].tools[2]: unknown tool "search" (known: exit_loop); ${register('search')}`,
      'F:6:39: agents[0].tools[3]: tool "search" is listed twice; remove one',
      `F:6:39: agents[0].tools[3]: unknown tool "search" (known: exit_loop); ${register('search')}`,
      'F:8:23: agents[1].model: unknown model "fastt" (known: provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2); write model: <a provider id>, or register a model "fastt" in code and name that module with validate --registry',
      'F:9:5: agents[2]: no model given and none is registered as "default"; write model: <a provider id such as gemini-2.5-flash or openai/gpt-4.1>',
    ]);
  });

  it('infers the root only when exactly one top-level agent has no parent', async () => {
    expect(
      await problems('app: a\nagents:\n  - { name: one, model: fast }\n  - { name: two, model: fast }\n'),
    ).toEqual(['F:1:1: root: missing; write root: <name of the top agent>, one of one, two']);
    expect(
      await problems(
        'app: a\nroot: tpo\nagents:\n  - { name: top, type: SequentialAgent, subAgents: [child] }\n  - { name: child, model: fast }\n',
      ),
    ).toEqual(['F:2:7: root: no agent named "tpo"; did you mean "top"?']);
  });

  it('reports agents the root does not use, and agents that contain themselves', async () => {
    expect(
      await problems(`app: a
root: top
agents:
  - { name: top, type: SequentialAgent, subAgents: [child] }
  - { name: child, model: fast }
  - { name: forgotten, model: fast }
`),
    ).toEqual([
      'F:6:5: agents[2]: agent "forgotten" is not used by root "top"; list it under subAgents or tools of an agent of the tree, or remove it',
    ]);
    expect(
      await problems(`app: a
root: top
agents:
  - name: top
    model: fast
    tools: [{ agent: helper }]
  - name: helper
    model: fast
    tools: [{ agent: top }]
`),
    ).toEqual([
      'F:9:22: agents[1].tools[0].agent: agent "top" contains itself (top → helper → top); remove this reference',
    ]);
  });

  it('checks outputSchema as JSON Schema, at the offending node', async () => {
    expect(
      await problems(`app: a
agents:
  - name: judge
    model: fast
    outputSchema:
      type: object
      properties:
        score: { type: int }
        tags: { type: array, items: { type: strin } }
`),
    ).toEqual([
      'F:8:24: agents[0].outputSchema.properties.score.type: unknown JSON Schema type "int"; did you mean "integer"?',
      'F:9:45: agents[0].outputSchema.properties.tags.items.type: unknown JSON Schema type "strin"; did you mean "string"?',
    ]);
  });

  it('throws one VALIDATION error listing every problem line by line, with the problems structured', async () => {
    const path = yamlFile(`app: a
root: top
agents:
  - name: top
    type: LoopAgent
    maxIterations: 0
    subAgents: [wrter]
  - { name: writer, modle: fast }
`);
    const err = (await loadAppsFromYaml(path, registries).catch((e: unknown) => e)) as AgentloomError;
    expect(err.code).toBe('VALIDATION');
    expect(err.message.split('\n')).toEqual([
      `3 problems in ${path}:`,
      `${path}:6:20: agents[0].maxIterations: maxIterations must be at least 1; write e.g. maxIterations: 5`,
      `${path}:7:17: agents[0].subAgents[0]: no agent named "wrter" in this app; did you mean "writer"? Or define it under agents: or inline here`,
      `${path}:8:21: agents[1].modle: unknown key "modle" in LlmAgent; did you mean "model"?`,
    ]);
    expect(err.details?.problems).toEqual([
      expect.objectContaining({ file: path, line: 6, col: 20, path: 'agents[0].maxIterations' }),
      expect.objectContaining({ file: path, line: 7, col: 17, path: 'agents[0].subAgents[0]' }),
      expect.objectContaining({ file: path, line: 8, col: 21, path: 'agents[1].modle' }),
    ]);
  });
});
