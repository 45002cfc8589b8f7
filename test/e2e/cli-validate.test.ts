/**
 * `agentloom validate` as a user runs it: a real process on the example files and on files full of mistakes. It
 * checks tool and model names as `dev --apps PATH` and `worker --apps PATH` load them (built-in tools, Gemini ids,
 * the files' ModelConfigs, and with `--registry MODULE` that module's exports), through the loader's own code path:
 * what validates loads in real `dev` and `worker` processes (with the definition hash validate printed), and what
 * fails validation fails there, with the same problems. A JS/TS apps module is loaded as `dev --apps` loads
 * it and its problems named one a line.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAppsModule } from '../../src/engine/apps/apps-module.js';
import { registerApps } from '../../src/engine/apps/registry.js';
import { freePort, REPO, ServerProcess } from '../support/processes/cli.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';

function validate(...args: string[]) {
  return validateWith({}, ...args);
}

function validateWith(env: Record<string, string | undefined>, ...args: string[]) {
  return spawnSync(process.execPath, ['bin/agentloom.js', 'validate', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: undefined, ...env },
    timeout: 60_000,
  });
}

const INVALID = 'test/fixtures/yaml/invalid-writer.yaml';
const REGISTRY = 'test/fixtures/yaml/registry.ts';
/** A process start on a busy machine: PGlite's first start takes many seconds. */
const START_TIMEOUT_MS = 170_000;

const dir = mkdtempSync(join(tmpdir(), 'agentloom-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every YAML file under examples/, and every folder of them: each is a path `--apps` takes. */
function examplePaths(): string[] {
  const paths: string[] = [];
  const visit = (folder: string): void => {
    const entries = readdirSync(join(REPO, folder)).sort();
    if (entries.some((name) => /\.ya?ml$/.test(name))) paths.push(folder);
    for (const name of entries) {
      const path = `${folder}/${name}`;
      if (statSync(join(REPO, path)).isDirectory()) visit(path);
      else if (/\.ya?ml$/.test(name)) paths.push(path);
    }
  };
  visit('examples');
  return paths;
}

describe('agentloom validate', () => {
  it('accepts the writer example with a one-line summary and exit 0', () => {
    const result = validate('examples/writer.yaml');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^ok: examples\/writer\.yaml: 1 app: writer \(7 agents, definition [0-9a-f]{12}\); names checked against built-in tools and provider model ids; --registry MODULE adds tools and models registered in code$/,
      ),
    ]);
  });

  it('reports an unknown tool, an unknown model and a kagent manifest naming an unknown tool with file:line:col (exit 1)', () => {
    const cases = [
      [
        'test/fixtures/yaml/unknown-tool.yaml',
        'test/fixtures/yaml/unknown-tool.yaml:7:24: agents[0].tools[1]: unknown tool "summon_dragon" (known: exit_loop); register it in code, createEngine({ tools: { summon_dragon: … } }), and name that module with validate --registry',
      ],
      [
        'test/fixtures/yaml/unknown-model.yaml',
        'test/fixtures/yaml/unknown-model.yaml:5:12: agents[0].model: unknown model "crystal-ball-9000" (known: provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2); write model: <a provider id>, or register a model "crystal-ball-9000" in code and name that module with validate --registry',
      ],
      [
        'test/fixtures/yaml/kagent-unknown-tool.yaml',
        'test/fixtures/yaml/kagent-unknown-tool.yaml:18:23: spec.declarative.tools[0].mcpServer.toolNames[0]: unknown tool "summon_dragon" (known: exit_loop); register it in code, createEngine({ tools: { summon_dragon: … } }), and name that module with validate --registry (or add a RemoteMCPServer or MCPServer manifest named "lair")',
      ],
    ] as const;
    for (const [path, line] of cases) {
      const result = validate(path);
      expect(result.status, result.stdout).toBe(1);
      expect(result.stdout.trim().split('\n')).toEqual([line, `1 problem in ${path}`]);
    }
    // The registry's names count besides the built-in ones: `summon_dragon` is still unknown, and listed with them.
    const withRegistry = validate('test/fixtures/yaml/unknown-tool.yaml', '--registry', REGISTRY);
    expect(withRegistry.status).toBe(1);
    expect(withRegistry.stdout).toContain('unknown tool "summon_dragon" (known: exit_loop, web_search);');
  });

  it('prints every problem of an invalid file as file:line:col: path: message and exits 1', () => {
    const result = validate(INVALID, '--registry', REGISTRY);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      `${INVALID}:7:17: agents[0].subAgents[0]: no agent named "reserch" in this app; did you mean "research"? Or define it under agents: or inline here`,
      `${INVALID}:11:17: agents[1].subAgents[0].name: "research-web" is not a valid agent name; use a JS identifier (letters, digits, _), e.g. "research_web"`,
      `${INVALID}:14:20: agents[2].maxIterations: maxIterations must be at most 100 in a declarative config; write e.g. maxIterations: 100`,
      `${INVALID}:16:63: agents[2].subAgents[0].outputky: unknown key "outputky" in LlmAgent; did you mean "outputKey"?`,
      `${INVALID}:17:85: agents[2].subAgents[1].tools[1]: unknown tool "web_serch" (known: exit_loop, web_search); did you mean "web_search"?`,
      `5 problems in ${INVALID}`,
    ]);
    // Without the registry, `writer_model` is unknown too: the engine would not have it either.
    const plain = validate(INVALID);
    expect(plain.status).toBe(1);
    const lines = plain.stdout.trim().split('\n');
    expect(lines).toContain(
      `${INVALID}:16:49: agents[2].subAgents[0].model: unknown model "writer_model" (known: provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2); write model: <a provider id>, or register a model "writer_model" in code and name that module with validate --registry`,
    );
    expect(lines).toContain(
      `${INVALID}:17:85: agents[2].subAgents[1].tools[1]: unknown tool "web_serch" (known: exit_loop); register it in code, createEngine({ tools: { web_serch: … } }), and name that module with validate --registry`,
    );
    expect(lines.at(-1)).toBe(`6 problems in ${INVALID}`);
  });

  it('accepts the kagent folder, its modelConfig declared by a Gemini ModelConfig; OpenAI needs its key, Bedrock is refused', () => {
    for (const args of [[], ['--registry', REGISTRY]]) {
      const result = validate('examples/kagent', ...args);
      expect(result.status, result.stdout).toBe(0);
      expect(result.stdout).toMatch(
        /^ok: examples\/kagent: 1 app: code-development-pipeline \(5 agents, definition [0-9a-f]{12}\)/,
      );
    }
    // The same folder on OpenAI: the key is read from the environment when the ModelConfig is loaded.
    const folder = join(dir, 'openai');
    cpSync(join(REPO, 'examples/kagent'), folder, { recursive: true });
    const pipeline = join(folder, 'pipeline.yaml');
    const gemini = readFileSync(pipeline, 'utf8');
    writeFileSync(
      pipeline,
      gemini.replace('provider: Gemini', 'provider: OpenAI').replace('gemini-2.5-flash', 'gpt-4.1'),
    );
    const withoutKey = validateWith({ OPENAI_API_KEY: undefined }, folder);
    expect(withoutKey.status).toBe(1);
    expect(withoutKey.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${pipeline}:\\d+:\\d+: spec\\.provider: the environment has no variable OPENAI_API_KEY \\(provider OpenAI reads its key from OPENAI_API_KEY, or from the variable apiKeySecretKey names\\): set it$`,
        ),
      ),
      `1 problem in ${folder}`,
    ]);
    expect(validateWith({ OPENAI_API_KEY: 'sk-test' }, folder).status).toBe(0);
    // A provider kagent has and agentloom does not call: one line-precise problem on the manifest.
    writeFileSync(pipeline, gemini.replace('provider: Gemini', 'provider: Bedrock'));
    const bedrock = validate(folder);
    expect(bedrock.status).toBe(1);
    expect(bedrock.stdout).toMatch(
      new RegExp(
        `^${pipeline}:\\d+:\\d+: spec\\.provider: provider Bedrock is not supported by agentloom: write one of OpenAI, AzureOpenAI, Anthropic, Ollama, Gemini$`,
        'm',
      ),
    );
  });

  it('loads a TS apps module as dev --apps does: the example app is valid, with the definitions an engine registers', async () => {
    const path = 'examples/kagent-remote/remote-apps.ts';
    const result = validate(path);
    expect(result.stderr).toBe('');
    expect(result.status, result.stdout).toBe(0);
    // The hashes an engine registers for the module's apps, as `dev --apps` would serve them.
    const registered = registerApps((await loadAppsModule(path)).apps);
    const summary = [...registered.values()]
      .map((app) => `${app.name} (1 agents, definition ${app.definitionHash.slice(0, 12)})`)
      .join(', ');
    expect(result.stdout.trim().split('\n')).toEqual([
      `ok: ${path}: 2 apps: ${summary}; names checked against built-in tools, provider model ids and the module's tools and models`,
    ]);
  });

  it('names every problem of a TS apps module, and a module that fails to load or exports no apps (exit 1)', () => {
    const path = 'test/fixtures/apps/invalid-apps.ts';
    const result = validate(path);
    expect(result.stderr).toBe('');
    expect(result.status, result.stdout).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      `${path}: apps[1] "bad name!": app name "bad name!" is not valid: use letters, digits, _ . -`,
      `${path}: apps[2] "typos": app "typos" is registered twice`,
      `${path}: app "typos", agent "drafter": model "fsat" is neither a provider id (such as gemini-2.5-flash or openai/gpt-4.1) nor exported in the module's \`models\` (known: fast); did you mean "fast"?`,
      `${path}: app "typos", agent "searcher": tool "lokup" is neither built in nor exported in the module's \`tools\` (known: exit_loop, lookup); did you mean "lookup"?`,
      `${path}: app "typos", agent "silent": names no model and the module's \`models\` export has no "default": give it a model (an instance, a provider id such as gemini-2.5-flash, or a name in \`models\`)`,
      `5 problems in ${path}`,
    ]);
    // A module that throws as it loads (the OAuth example without its secret), one exporting no `apps`, and one
    // whose `rateLimits` export is wrong: one line each saying what is wrong.
    const exportsApp = join(dir, 'exports-app.mjs');
    writeFileSync(exportsApp, 'export const app = [];\n');
    const badLimits = join(dir, 'bad-limits.mjs');
    writeFileSync(
      badLimits,
      'export const apps = [];\nexport const rateLimits = { m: { requestsPerMinute: -1 } };\n',
    );
    const cases = [
      [
        'examples/oauth2/calendar-app.ts',
        /failed to load: set OAUTH_CLIENT_SECRET to the secret the provider accepts/,
      ],
      [exportsApp, /must export `apps`: an array of \{ name, agent \}/],
      [badLimits, /rateLimits.*requestsPerMinute/],
    ] as const;
    for (const [module, message] of cases) {
      const failed = validateWith({ OAUTH_CLIENT_SECRET: undefined }, module);
      expect(failed.status, failed.stdout + failed.stderr).toBe(1);
      const lines = failed.stdout.trim().split('\n');
      expect(lines).toEqual([expect.stringMatching(message), `1 problem in ${module}`]);
      expect(lines[0]!.startsWith(`${module}: `)).toBe(true);
    }
    // A `plugins` export checked as the engine registers it: a misspelt callback is named.
    const badPlugins = join(dir, 'bad-plugins.mjs');
    writeFileSync(
      badPlugins,
      "export const apps = [];\nexport const plugins = [{ name: 'guard', beforeModelCalback() {} }];\n",
    );
    const refused = validateWith({}, badPlugins);
    expect(refused.status, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stdout).toContain(
      `${badPlugins}: plugin "guard" has a method "beforeModelCalback", which is not a plugin callback`,
    );
    expect(validate('examples/no-such-app.ts').status).toBe(2);
  });

  it('exits 2 when the path does not exist', () => {
    const result = validate('examples/nothing-here.yaml');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('CONFIG: examples/nothing-here.yaml does not exist');
  });
});

describe('validate PATH ⇔ dev --apps PATH ⇔ worker --apps PATH', () => {
  const paths = [
    ...examplePaths(),
    'test/fixtures/yaml/unknown-tool.yaml',
    'test/fixtures/yaml/unknown-model.yaml',
    'test/fixtures/yaml/kagent-unknown-tool.yaml',
  ];

  it('walks examples/: its folders and every file in them', () => {
    expect(paths).toEqual(
      expect.arrayContaining([
        'examples',
        'examples/writer.yaml',
        'examples/kagent',
        'examples/kagent/agents.yaml',
        'examples/kagent/pipeline.yaml',
        'examples/kagent/mcp-servers.yaml',
      ]),
    );
  });

  /** Whether each path validates: the kagent folder's files are parts of one app, not apps on their own. */
  const VALID: Record<string, boolean> = {
    examples: true,
    'examples/writer.yaml': true,
    'examples/kagent': true,
    'examples/kagent/agents.yaml': false,
    'examples/kagent/pipeline.yaml': false,
    'examples/kagent/mcp-servers.yaml': false,
    // Its tool and model are registered in code (validate --registry examples/oauth2/calendar-tools.ts).
    'examples/oauth2': false,
    'examples/oauth2/calendar-app.yaml': false,
    'test/fixtures/yaml/unknown-tool.yaml': false,
    'test/fixtures/yaml/unknown-model.yaml': false,
    'test/fixtures/yaml/kagent-unknown-tool.yaml': false,
  };

  it.each(paths)(
    '%s: validates exactly when dev and worker load it',
    async (path) => {
      const checked = validate(path);
      expect(checked.status, checked.stdout + checked.stderr).toBe(VALID[path] === false ? 1 : 0);
      const port = await freePort();
      const data = join(dir, relative('.', path).replace(/[/.]/g, '_'));
      // The examples' models are Gemini ids: a process serving them needs a key (never used here: no run).
      const dev = new ServerProcess(['dev', '--apps', path, '--port', String(port), '--data', data], {
        GEMINI_API_KEY: 'unused-in-this-test',
      });
      const worker = new ServerProcess(['worker', '--apps', path], {
        GEMINI_API_KEY: 'unused-in-this-test',
        DATABASE_URL: await createTestDatabase(),
        REDIS_URL: testRedisUrl(),
        AGENTLOOM_QUEUE_PREFIX: testQueuePrefix(),
        LOG_LEVEL: 'info',
      });
      if (checked.status === 0) {
        // Loads: dev serves each app with the definition validate printed; the worker starts with it.
        const printed = [...checked.stdout.matchAll(/(\S+) \(\d+ agents, definition ([0-9a-f]{12})\)/g)].map(
          (m) => [m[1], m[2]],
        );
        expect(printed.length).toBeGreaterThan(0);
        await dev.waitForOutput(/^agentloom dev: listening on http:\/\/\S+$/m, {
          timeoutMs: START_TIMEOUT_MS,
          what: 'dev to listen',
        });
        const { apps } = (await (await fetch(`http://127.0.0.1:${port}/v1/apps`)).json()) as {
          apps: { name: string; definitionHash: string }[];
        };
        expect(apps.map((a) => [a.name, a.definitionHash.slice(0, 12)])).toEqual(printed);
        const started = await worker.waitForOutput(/^.*"msg":"worker started".*$/m, {
          timeoutMs: START_TIMEOUT_MS,
          what: 'the worker to start',
        });
        const served = (JSON.parse(started[0]) as { apps: { name: string; definitionHash: string }[] }).apps;
        expect(served.map((a) => [a.name, a.definitionHash.slice(0, 12)])).toEqual(printed);
        expect(await dev.stop('SIGTERM')).toEqual({ code: 0, signal: null });
        expect(await worker.stop('SIGTERM')).toEqual({ code: 0, signal: null });
        return;
      }
      // Fails: both refuse to start, naming every problem validate named.
      const problems = checked.stdout.trim().split('\n').slice(0, -1);
      expect(problems.length).toBeGreaterThan(0);
      for (const server of [dev, worker]) {
        expect(await server.exited, server.output).toEqual({ code: 1, signal: null });
        for (const problem of problems) expect(server.stderr, server.output).toContain(problem);
      }
    },
    2 * START_TIMEOUT_MS + 30_000,
  );

  it(
    'a valid file whose model has no key: validate accepts it, dev and worker refuse to start naming the variable',
    async () => {
      const file = join(dir, 'openai-app.yaml');
      writeFileSync(
        file,
        [
          'app: quoter',
          'agents:',
          '  - { name: quoter, type: LlmAgent, model: openai/gpt-4.1, instruction: Quote something. }',
          '',
        ].join('\n'),
      );
      expect(validate(file).status).toBe(0);
      const noKeys = { OPENAI_API_KEY: undefined, GEMINI_API_KEY: undefined, GOOGLE_API_KEY: undefined };
      const cases = [
        { path: file, variable: 'OPENAI_API_KEY', model: 'openai/gpt-4.1' },
        { path: 'examples/writer.yaml', variable: 'GEMINI_API_KEY', model: 'gemini-2.5-flash' },
      ];
      for (const { path, variable, model } of cases) {
        const port = await freePort();
        const dev = new ServerProcess(
          ['dev', '--apps', path, '--port', String(port), '--data', join(dir, `nokey-${variable}`)],
          noKeys,
        );
        const worker = new ServerProcess(['worker', '--apps', path], {
          ...noKeys,
          DATABASE_URL: await createTestDatabase(),
          REDIS_URL: testRedisUrl(),
          AGENTLOOM_QUEUE_PREFIX: testQueuePrefix(),
        });
        for (const server of [dev, worker]) {
          expect(await server.exited, server.output).toEqual({ code: 1, signal: null });
          expect(server.stderr).toContain(`Model '${model}' needs ${variable}: set it in the environment.`);
        }
      }
    },
    2 * START_TIMEOUT_MS,
  );
});
