/**
 * A server process loads the SDKs of what it is configured to use, not of everything agentloom supports: each
 * start pays for the modules it loads. Real `agentloom dev` / `worker` processes are started with a loader hook that
 * records every module they resolve (test/support/processes/record-modules.mjs):
 * - `dev` of the built-in example (scripted models, PGlite, the in-process queue) loads no model provider's SDK, no
 *   BullMQ / Redis client / rate limiter, no MCP SDK;
 * - `dev` of a YAML app on an `openai/` model loads the `openai` SDK only when the model is first called: the run
 *   then completes through it (the wire server got the call);
 * - `worker --queue redis` loads bullmq and ioredis (its queue), and no provider SDK before a call.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import { apiClient } from '../support/client/http-client.js';
import { runReaches } from '../support/client/runs.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';
import { chatCompletion, startOpenAIWire, type ScriptedWireServer } from '../support/wire/openai-wire.js';

const root = mkdtempSync(join(tmpdir(), 'agentloom-server-modules-'));
const template = join(root, 'pglite-template');
let dirs = 0;
/** A start on a busy machine (the PGlite directory is migrated already). */
const START_TIMEOUT_MS = 90_000;

/** Packages of a model provider, the queue on Redis, the rate limiter and MCP. */
const PROVIDERS = ['openai', '@anthropic-ai/sdk', '@google/genai'];
const REDIS_QUEUE = ['bullmq', 'ioredis', 'rate-limiter-flexible', 'cron-parser'];
const MCP = ['@modelcontextprotocol/sdk'];

beforeAll(async () => {
  const migrated = await runCli(['migrate', '--data', template]);
  expect(migrated.code, show(migrated)).toBe(0);
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A CLI process whose resolved modules are appended to the returned log. */
function recorded(args: string[], env: Record<string, string> = {}): { server: ServerProcess; log: string } {
  const log = join(root, `modules-${dirs++}.log`);
  writeFileSync(log, '');
  const hook = join(REPO, 'test/support/processes/record-modules.mjs');
  const server = new ServerProcess(args, { ...env, MODULE_LOG: log }, [
    process.execPath,
    '--import',
    hook,
    CLI,
  ]);
  return { server, log };
}

/** The packages of node_modules the process resolved so far (`@scope/name` or `name`). */
function packagesIn(log: string): Set<string> {
  const packages = new Set<string>();
  for (const url of readFileSync(log, 'utf8').split('\n')) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match) packages.add(match[1] as string);
  }
  return packages;
}

/** A `dev` of `apps` (or the built-in example) on a copy of the migrated PGlite directory; its URL once listening. */
async function startDev(
  apps: string | undefined,
  env: Record<string, string> = {},
): Promise<{ server: ServerProcess; log: string; url: string }> {
  const data = join(root, `data-${dirs++}`);
  cpSync(template, data, { recursive: true });
  const args = ['dev', '--port', '0', '--data', data, ...(apps ? ['--apps', apps] : [])];
  const { server, log } = recorded(args, env);
  const [, url] = await server.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: START_TIMEOUT_MS,
    what: 'dev to listen',
  });
  return { server, log, url: url as string };
}

describe('a server process loads only the SDKs it uses', () => {
  it('dev of the example (PGlite, in-process queue, scripted models) loads no provider, Redis or MCP SDK', async () => {
    const { server, log } = await startDev(undefined);
    try {
      const packages = packagesIn(log);
      // The hook saw the process's modules: the store's driver is among them.
      expect(packages.has('@electric-sql/pglite'), [...packages].join(', ')).toBe(true);
      expect([...PROVIDERS, ...REDIS_QUEUE, ...MCP].filter((p) => packages.has(p))).toEqual([]);
    } finally {
      await server.stop('SIGTERM');
    }
  });

  describe('dev of a YAML app on an openai/ model', () => {
    let wire: ScriptedWireServer;
    beforeAll(async () => {
      wire = await startOpenAIWire();
    });
    afterAll(() => wire.close());

    it('loads the openai SDK at the first model call, and the call goes through it', async () => {
      const apps = join(root, 'openai-app.yaml');
      writeFileSync(
        apps,
        [
          'app: asker',
          'agents:',
          '  - name: asker',
          '    model: openai/gpt-4.1',
          "    instruction: 'Answer.'",
          '',
        ].join('\n'),
      );
      const { server, log, url } = await startDev(apps, {
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: `${wire.url}/v1`,
      });
      try {
        const atStart = packagesIn(log);
        expect([...PROVIDERS, ...REDIS_QUEUE, ...MCP].filter((p) => atStart.has(p))).toEqual([]);
        wire.reply(chatCompletion({ text: 'forty-two' }));
        const http = apiClient({ base: url, requireOk: true });
        const { body } = await http('POST', '/v1/apps/asker/invocations', { userId: 'ann', input: 'Ask.' });
        const run = await runReaches(http, body.invocationId as string, 'completed', {
          failOn: ['failed', 'cancelled'],
        }).catch((err: Error) => {
          throw new Error(`${err.message}\n${server.output}`, { cause: err });
        });
        expect(run.output).toBe('forty-two');
        expect(wire.requests).toHaveLength(1);
        const afterRun = packagesIn(log);
        expect(afterRun.has('openai')).toBe(true);
        expect(
          ['@anthropic-ai/sdk', '@google/genai', ...REDIS_QUEUE, ...MCP].filter((p) => afterRun.has(p)),
        ).toEqual([]);
      } finally {
        await server.stop('SIGTERM');
      }
    });
  });

  it('worker --queue redis loads bullmq and ioredis, and no provider or MCP SDK before a call', async () => {
    const { server, log } = recorded(
      ['worker', '--apps', join(REPO, 'examples/writer.yaml'), '--queue', 'redis'],
      {
        DATABASE_URL: await createTestDatabase(),
        REDIS_URL: testRedisUrl(),
        AGENTLOOM_QUEUE_PREFIX: testQueuePrefix(),
        GEMINI_API_KEY: 'test-key',
        LOG_LEVEL: 'info',
      },
    );
    try {
      await server.waitForOutput(/"msg":"worker started"/, {
        timeoutMs: START_TIMEOUT_MS,
        what: 'the worker',
      });
      const packages = packagesIn(log);
      expect(['bullmq', 'ioredis'].filter((p) => packages.has(p))).toEqual(['bullmq', 'ioredis']);
      expect([...PROVIDERS, ...MCP].filter((p) => packages.has(p))).toEqual([]);
    } finally {
      await server.stop('SIGTERM');
    }
  });
});
