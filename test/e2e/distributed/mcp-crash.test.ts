/**
 * An MCP call open when its worker is SIGKILLed (durability), with real `agentloom worker` processes on
 * PostgreSQL and Redis and a real MCP server process (test/fixtures/mcp-server.ts over Streamable HTTP) whose call
 * log says what it saw:
 *
 * - unsafe (the default): the next worker does not send the call again; the run pauses with an in-doubt call, and
 *   answering it resumes the run — the server saw the call once;
 * - listed `idempotent`: the next worker sends it again with the same idempotency key in `_meta`, and the run
 *   completes by itself;
 * - chaos: runs of three MCP calls each, enqueued until three kills hit them, over three workers while a random one
 *   is SIGKILLed every ~1 s: every run completes, every stored call reached the server, and none was sent after its
 *   response was stored.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, IDEMPOTENCY_META_KEY, type AppDefinition } from '../../../src/index.js';
import { REPO } from '../../support/processes/cli.js';
import { Cluster, startKiller, type Kill } from '../../support/processes/cluster.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../../support/services/services.js';
import { waitFor } from '../../support/assert/wait-for.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-mcp-crash-'));
const log = join(dir, 'calls.jsonl');
const server = spawn(
  process.execPath,
  ['--import', 'tsx', join(REPO, 'test/fixtures/mcp-server.ts'), '--http', '0'],
  {
    cwd: REPO,
    env: { ...process.env, MCP_CALL_LOG: log },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
let out = '';
server.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
const port = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
  timeoutMs: 60_000,
  what: 'the MCP test server to listen',
});
// The workers inherit it, and the apps module reads it when the producer engine below imports it.
process.env.AGENTLOOM_E2E_MCP_URL = `http://127.0.0.1:${port}/mcp`;
const APPS_MODULE = join(REPO, 'test/e2e/fixtures/mcp-apps.ts');
const { apps, MCP_CHAOS_STEPS } = (await import(APPS_MODULE)) as {
  apps: AppDefinition[];
  MCP_CHAOS_STEPS: number;
};

const options = {
  databaseUrl: await createTestDatabase(),
  redisUrl: testRedisUrl(),
  prefix: testQueuePrefix(),
  leaseMs: 2_000,
  appsModule: APPS_MODULE,
};
const engine = await createEngine({
  apps,
  database: options.databaseUrl,
  queue: { redis: options.redisUrl, prefix: options.prefix },
  worker: false,
  leaseMs: options.leaseMs,
  logger: pino({ level: 'error' }),
});

afterAll(async () => {
  await engine.close();
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface LoggedCall {
  tool: string;
  args: { key?: string };
  meta?: Record<string, unknown>;
  end: string;
}

/** The calls of `block` the server saw start for `key`. */
function started(key: string): LoggedCall[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedCall)
    .filter((c) => c.tool === 'block' && c.args.key === key && c.end === 'started');
}

/** Enqueues a run of `app` tagged `run` (the key its call blocks on); waits until the call reached the server. */
async function runUntilCallOpen(app: string, run: string): Promise<string> {
  const { invocationId } = await engine.enqueue({ app, userId: 'e2e', input: 'go', stateDelta: { run } });
  await waitFor(() => started(run).length > 0 || undefined, {
    timeoutMs: 90_000,
    what: `the call of ${run} to reach the MCP server`,
  });
  return invocationId;
}

describe('an MCP call open when its worker is SIGKILLed', () => {
  it('unsafe: pauses in doubt instead of sending it again; answered, the run completes; the server saw it once', async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1);
    const id = await runUntilCallOpen('mcp_unsafe', 'unsafe-1');
    await first?.kill();
    await cluster.start(1);
    const paused = await engine.wait(id, { timeoutMs: 90_000 });
    expect(paused.status).toBe('paused');
    expect(paused.pending).toMatchObject([{ kind: 'in_doubt', name: 'block', args: { key: 'unsafe-1' } }]);
    expect(started('unsafe-1')).toHaveLength(1);

    await engine.respond({
      invocationId: id,
      functionResponses: [
        { id: paused.pending[0]!.callId, response: { action: 'skip', result: { checked: 'by hand' } } },
      ],
    });
    const done = await engine.wait(id, { timeoutMs: 90_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('got {"checked":"by hand"}');
    expect(started('unsafe-1')).toHaveLength(1);
  });

  it('idempotent: the next worker sends it again with the same key, and the run completes', async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1);
    const id = await runUntilCallOpen('mcp_idempotent', 'idem-1');
    await first?.kill();
    // The call sent again is answered at once.
    writeFileSync(`${log}.release-idem-1`, '');
    await cluster.start(1);
    const done = await engine.wait(id, { timeoutMs: 90_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toContain('released idem-1');
    const calls = started('idem-1');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const keys = new Set(calls.map((c) => c.meta?.[IDEMPOTENCY_META_KEY]));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(new RegExp(`^${id}:`));
  });
});

describe('MCP tools while workers are SIGKILLed every ~1 s', () => {
  it('completes every run; no call whose response was stored is sent again, and every stored one was sent', async () => {
    const cluster = new Cluster(options);
    await cluster.start(3);
    const ids: string[] = [];
    const enqueue = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const { invocationId } = await engine.enqueue({
          app: 'mcp_chaos',
          userId: 'e2e',
          input: 'go',
          stateDelta: { run: `chaos-${ids.length}` },
        });
        ids.push(invocationId);
      }
    };
    const killer = startKiller(cluster, { everyMs: 1_000 });
    let kills: Kill[] = [];
    try {
      // Work keeps arriving until three kills hit it, however fast this machine runs it.
      await enqueue(10);
      while (killer.kills.length < 3 && ids.length < 120) {
        await new Promise((done) => setTimeout(done, 1_000));
        await enqueue(5);
      }
      await waitFor(
        async () => {
          const views = await Promise.all(ids.map((id) => engine.get(id)));
          const bad = views.find(
            (v) => v.status === 'failed' || v.status === 'cancelled' || v.status === 'paused',
          );
          if (bad) throw new Error(`a chaos run ended ${bad.status}: ${JSON.stringify(bad)}`);
          return views.every((v) => v.status === 'completed');
        },
        { timeoutMs: 180_000, intervalMs: 500, what: `${ids.length} MCP chaos runs to complete` },
      );
    } finally {
      kills = await killer.stop();
    }
    const count = ids.length;
    expect(kills.length).toBeGreaterThanOrEqual(3);

    // What was stored: one echo response per call, with when it was stored.
    const stored = new Map<string, number>();
    for (const id of ids) {
      for await (const event of engine.events(id)) {
        for (const part of event.content?.parts ?? []) {
          const response = part.functionResponse;
          if (response?.name !== 'echo') continue;
          const key = `${id}:${response.id}`;
          expect(stored.has(key), `${key} stored twice`).toBe(false);
          expect(response.response).toMatchObject({ isError: false });
          stored.set(key, event.timestamp);
        }
      }
    }
    expect(stored.size).toBe(count * MCP_CHAOS_STEPS);
    // What the server saw, by idempotency key.
    const sent = new Map<string, number[]>();
    for (const line of readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
      const call = JSON.parse(line) as LoggedCall & { at: number };
      if (call.tool !== 'echo') continue;
      const key = String(call.meta?.[IDEMPOTENCY_META_KEY]);
      sent.set(key, [...(sent.get(key) ?? []), call.at]);
    }
    const resent = [...sent.values()].filter((times) => times.length > 1).length;
    console.log(
      `mcp chaos: ${count} runs, ${stored.size} stored calls, ${kills.length} kills, ${resent} calls sent again after a kill`,
    );
    for (const [key, at] of stored) {
      expect(sent.get(key)?.length ?? 0, `${key} stored but never sent`).toBeGreaterThan(0);
      expect(
        (sent.get(key) ?? []).filter((t) => t > at),
        `${key} sent after its response was stored`,
      ).toEqual([]);
    }
    expect([...sent.keys()].filter((key) => !stored.has(key))).toEqual([]);
  });
});
