/**
 * Reference 001's four examples on each provider of a kagent ModelConfig. For OpenAI,
 * Anthropic, Ollama and AzureOpenAI, each example of test/fixtures/kagent-reference/ (sequential, parallel, loop,
 * nested) is copied with a `default-model-config` ModelConfig of that provider pointing at a wire server in this
 * process (test/support/wire/kagent-provider-wire.ts), its key in the variable `apiKeySecretKey` names (not for Ollama):
 * - `agentloom validate <folder>` exits 0;
 * - `agentloom dev --apps <folder>` (one process per folder: a kagent folder is one app) runs it through its HTTP API
 *   to completion; every model call reached the wire server in the provider's format (path, key header, model,
 *   the ModelConfig's generation setting and default header), and the agents ran as the workflow says: the
 *   sequential steps in order, each parallel branch, the loop until the critic's exit_loop on its second turn,
 *   both workflows of the nested example.
 * A misspelt provider or an unknown field of a provider's block fails validate with file:line:col and a "did you mean".
 *
 * Each dev starts on a copy of one PGlite directory migrated by `agentloom migrate --data` (a first start migrating
 * its own takes many seconds more).
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import {
  expectedWire,
  KAGENT_PROVIDERS,
  keyEnv,
  MISTAKES,
  modelConfigYaml,
  startProviderWire,
  type AnsweredCall,
  type KagentProvider,
  type ProviderWire,
} from '../support/wire/kagent-provider-wire.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { runReaches } from '../support/client/runs.js';

const FIXTURES = join(REPO, 'test/fixtures/kagent-reference');
const root = mkdtempSync(join(tmpdir(), 'agentloom-kagent-providers-'));
const template = join(root, 'pglite-template');
let folders = 0;
/** A dev start on a busy machine (the PGlite directory is migrated already). */
const START_TIMEOUT_MS = 90_000;
/** One example under one provider: validate, a dev start, the run. */
const EXAMPLE_TIMEOUT_MS = 180_000;

beforeAll(async () => {
  const migrated = await runCli(['migrate', '--data', template]);
  expect(migrated.code, show(migrated)).toBe(0);
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of the example `name` with `modelConfig` written beside its Agents. */
function exampleFolder(name: string, modelConfig: string): string {
  const dir = join(root, `${name}-${folders++}`);
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  writeFileSync(join(dir, 'model-config.yaml'), modelConfig);
  return dir;
}

interface Invocation {
  id: string;
  status: string;
  output: string | null;
}

/** Runs `app` once through a dev serving `dir` (stopped afterwards), and returns the completed invocation. */
async function runUnderDev(dir: string, app: string, env: Record<string, string>): Promise<Invocation> {
  const data = join(root, `data-${folders++}`);
  cpSync(template, data, { recursive: true });
  const dev = new ServerProcess(['dev', '--port', '0', '--apps', dir, '--data', data], env);
  let invocation: Invocation;
  try {
    const [, url] = await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
      timeoutMs: START_TIMEOUT_MS,
      what: 'dev',
    });
    const http = apiClient({ base: url as string, requireOk: true });
    const run = async (): Promise<Json> => {
      const { body } = await http('POST', `/v1/apps/${app}/invocations`, {
        userId: 'ann',
        input: 'Build it.',
      });
      return runReaches(http, body.invocationId as string, 'completed', { failOn: ['failed', 'cancelled'] });
    };
    // A refused call or a failed run is shown with what the dev printed.
    invocation = (await run().catch((err: Error) => {
      throw new Error(`${err.message}\n${dev.output}`, { cause: err });
    })) as Json & Invocation;
  } finally {
    await dev.stop('SIGTERM');
  }
  expect(dev.exit, dev.output).toEqual({ code: 0, signal: null });
  return invocation;
}

/** The example folders, the app each serves, and what its agents must have done. */
const EXAMPLES: {
  folder: string;
  app: string;
  check: (calls: AnsweredCall[]) => void;
  /** The run's output: the last answer stored (a parallel branch's: whichever was stored last). */
  output: unknown;
}[] = [
  {
    folder: 'sequential',
    app: 'code-development-pipeline',
    check: (calls) =>
      expect(calls.map((c) => c.agent)).toEqual([
        'code-development-pipeline',
        'code-writer',
        'code-reviewer',
        'code-refactorer',
      ]),
    output: 'code-refactorer answers (turn 1)',
  },
  {
    folder: 'parallel',
    app: 'parallel-research',
    check: (calls) => {
      expect(calls[0]?.agent).toBe('parallel-research');
      // Every branch called the model (in whatever order the branches ran).
      expect(
        calls
          .slice(1)
          .map((c) => c.agent)
          .sort(),
      ).toEqual(['carbon-capture-researcher', 'ev-technology-researcher', 'renewable-energy-researcher']);
    },
    output: expect.stringMatching(/-researcher answers \(turn 1\)$/),
  },
  {
    folder: 'loop',
    app: 'iterative-improvement',
    check: (calls) => {
      // Two iterations of maxIterations 5: the critic's exit_loop on its second turn ends the loop.
      expect(calls.map((c) => c.agent)).toEqual([
        'iterative-improvement',
        'writer-agent',
        'critic-agent',
        'writer-agent',
        'critic-agent',
      ]);
      expect(calls[2]?.move).toEqual({ text: 'critic-agent answers (turn 1)' });
      expect(calls[4]?.move).toEqual({ calls: [{ name: 'exit_loop', args: {} }] });
    },
    output: 'writer-agent answers (turn 2)',
  },
  {
    folder: 'nested',
    app: 'complex-workflow',
    check: (calls) => {
      // The root calls both workflow tools in one answer; they run side by side, each in its own order.
      expect(calls[0]).toMatchObject({
        agent: 'complex-workflow',
        move: {
          calls: [{ name: 'complex_workflow_0_parallel' }, { name: 'complex_workflow_1_sequential' }],
        },
      });
      const agents = calls.slice(1).map((c) => c.agent);
      expect([...agents].sort()).toEqual([
        'analysis-agent',
        'report-agent',
        'research-agent-1',
        'research-agent-2',
        'synthesis-agent',
      ]);
      expect(agents.filter((a) => !a.startsWith('research-'))).toEqual([
        'synthesis-agent',
        'analysis-agent',
        'report-agent',
      ]);
    },
    output: expect.stringMatching(/-agent(-\d)? answers \(turn 1\)$/),
  },
];

describe.each(KAGENT_PROVIDERS)(
  'reference 001 with default-model-config on %s',
  (provider: KagentProvider) => {
    let wire: ProviderWire;
    beforeAll(async () => {
      wire = await startProviderWire(provider);
    });
    afterAll(() => wire?.close());

    it.each(EXAMPLES)(
      '$folder: validates, and runs under agentloom dev',
      async ({ folder, app, check, output }) => {
        const dir = exampleFolder(folder, modelConfigYaml(provider, wire.server.url));
        const env = keyEnv(provider);
        const validated = await runCli(['validate', dir], { env });
        expect(validated.code, show(validated)).toBe(0);
        expect(validated.stdout).toContain(`: 1 app: ${app} (`);

        wire.serve(dir);
        const invocation = await runUnderDev(dir, app, env);
        expect(invocation.status).toBe('completed');
        expect(invocation.output).toEqual(output);
        const { calls } = wire;
        expect(calls.filter((c) => c.agent === '?')).toEqual([]);
        check(calls);
        // Every call in the provider's wire format, with the key in its header.
        const wireFormat = expectedWire(provider);
        for (const { request } of calls) {
          expect(request.method).toBe('POST');
          expect(request.path).toBe(wireFormat.path);
          expect(Object.fromEntries(request.query)).toEqual(wireFormat.query);
          expect(request.headers).toMatchObject(wireFormat.headers);
          for (const name of wireFormat.absentHeaders ?? []) expect(request.headers).not.toHaveProperty(name);
          expect(request.body).toMatchObject(wireFormat.body);
        }
      },
      EXAMPLE_TIMEOUT_MS,
    );

    it('a misspelt provider or field of its block fails validate with file:line:col and a "did you mean"', async () => {
      const right = modelConfigYaml(provider, wire.server.url);
      await Promise.all(
        MISTAKES[provider].map(async ({ what, right: good, wrong, problem }) => {
          const text = right.replace(good, wrong);
          expect(text, `${provider}'s ModelConfig has ${good}`).not.toBe(right);
          const dir = exampleFolder('sequential', text);
          const result = await runCli(['validate', dir], { env: keyEnv(provider) });
          // Where the problem is: the misspelt provider's value, or the misspelt key.
          const lines = text.split('\n');
          const line = lines.findIndex((l) => l.includes(wrong));
          const word = what === 'provider' ? wrong.split(': ')[1] : wrong.split(':')[0]?.trim();
          const column = (lines[line] ?? '').indexOf(word as string) + 1;
          expect(result.code, show(result)).toBe(1);
          expect(result.stdout.trim().split('\n')).toEqual([
            `${join(dir, 'model-config.yaml')}:${line + 1}:${column}: ${problem}`,
            `1 problem in ${dir}`,
          ]);
        }),
      );
    });
  },
);
