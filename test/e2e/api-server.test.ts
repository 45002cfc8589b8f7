/**
 * `agentloom api` as a real process with a real `agentloom worker` on PostgreSQL + Redis: a run driven only through
 * HTTP — enqueued with a key, followed over SSE until it pauses for confirmation, confirmed, followed again with
 * Last-Event-ID until it completes (every event exactly once) — while the API process itself runs no step.
 * SIGTERM stops the API with exit code 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { APPS_MODULE, Cluster, fileServices } from '../support/cluster.js';
import { waitFor } from '../support/wait-for.js';

const REPO = resolve(import.meta.dirname, '../..');
const KEY = 'e2e-ops-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };

const { options, db } = await fileServices();

/** A free TCP port on loopback (released just before the API binds it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** One `agentloom api` process, its output kept for assertions and failure reports. */
class ApiProcess {
  readonly child: ChildProcess;
  output = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [join(REPO, 'bin/agentloom.js'), 'api', ...args], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((done) =>
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        done(this.exit);
      }),
    );
  }

  lines(): Record<string, unknown>[] {
    return this.output.split('\n').flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }
}

/** Reads an SSE response to its end: the messages with their ids, data and event names. */
async function readStream(response: Response): Promise<{ id?: string; event?: string; data?: string }[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const message: { id?: string; event?: string; data?: string } = {};
      for (const line of block.split('\n')) {
        const m = /^(id|event|data): ?(.*)$/.exec(line);
        if (m) message[m[1] as 'id' | 'event' | 'data'] = m[2];
      }
      return message;
    });
}

const spawned: ApiProcess[] = [];
afterAll(async () => {
  for (const api of spawned) if (!api.exit) api.child.kill('SIGKILL');
  await Promise.all(spawned.map((api) => api.exited));
});

describe('agentloom api + agentloom worker', () => {
  it('drives a run through HTTP: enqueue, SSE to the pause, confirm, SSE resumed to completion', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ['DATABASE_URL', 'REDIS_URL', 'AGENTLOOM_APPS', 'PORT']) delete env[key];
    const api = new ApiProcess(['--port', String(port), '--apps', APPS_MODULE], {
      ...env,
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      AGENTLOOM_QUEUE_PREFIX: options.prefix,
      AGENTLOOM_API_KEYS: `ops:${KEY}`,
      LOG_LEVEL: 'info',
    });
    spawned.push(api);
    const cluster = new Cluster(options);
    const [worker] = await Promise.all([
      cluster.start(1).then((w) => w[0]),
      waitFor(
        () => {
          if (api.exit) throw new Error(`api exited ${JSON.stringify(api.exit)}:\n${api.output}`);
          return api.lines().find((l) => l.msg === 'api listening');
        },
        { timeoutMs: 60_000, intervalMs: 50, what: 'the api to listen' },
      ),
    ]);
    try {
      const listening = api.lines().find((l) => l.msg === 'api listening') as { url: string; auth: string };
      expect(listening.auth).toBe('keys');
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect((await fetch(`${base}/v1/apps`)).status).toBe(401);

      const created = await fetch(`${base}/v1/apps/confirm/invocations`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ userId: 'e2e', input: 'publish it', stateDelta: { run: 'api-e2e' } }),
      });
      expect(created.status).toBe(202);
      const { invocationId } = (await created.json()) as { invocationId: string };

      // Follow until the run settles: it pauses for the confirmation of `publish`.
      const first = await readStream(
        await fetch(`${base}/v1/invocations/${invocationId}/events`, {
          headers: { ...AUTH, accept: 'text/event-stream' },
        }),
      );
      const end = first.at(-1);
      expect(end?.event).toBe('end');
      expect(JSON.parse(end?.data ?? '{}')).toMatchObject({ status: 'paused' });
      const firstEvents = first.filter((m) => m.id !== undefined);
      expect(firstEvents.length).toBeGreaterThanOrEqual(2);

      const view = (await (
        await fetch(`${base}/v1/invocations/${invocationId}`, { headers: AUTH })
      ).json()) as {
        status: string;
        pending: { callId: string; kind: string; name: string }[];
      };
      expect(view.status).toBe('paused');
      expect(view.pending[0]).toMatchObject({ kind: 'confirmation', name: 'publish' });
      const confirmed = await fetch(
        `${base}/v1/invocations/${invocationId}/confirmations/${view.pending[0]?.callId}`,
        {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/json' },
          body: JSON.stringify({ confirmed: true }),
        },
      );
      expect(confirmed.status).toBe(200);

      // Resume from the last event id: the rest of the run, to completion, nothing twice.
      const second = await readStream(
        await fetch(`${base}/v1/invocations/${invocationId}/events?stay=0`, {
          headers: {
            ...AUTH,
            accept: 'text/event-stream',
            'last-event-id': firstEvents.at(-1)?.id as string,
          },
        }),
      );
      expect(JSON.parse(second.at(-1)?.data ?? '{}')).toMatchObject({ status: 'completed' });
      const seqs = [...firstEvents, ...second.filter((m) => m.id !== undefined)].map((m) => Number(m.id));
      const listed = (await (
        await fetch(`${base}/v1/invocations/${invocationId}/events`, { headers: AUTH })
      ).json()) as { events: { seq: number; author: string }[] };
      expect(seqs).toEqual(listed.events.map((e) => e.seq));
      const done = (await (
        await fetch(`${base}/v1/invocations/${invocationId}`, { headers: AUTH })
      ).json()) as {
        status: string;
        output: string;
      };
      expect(done).toMatchObject({ status: 'completed', output: 'approver done' });

      // The worker ran every model and tool call; the API process none.
      const { rows: calls } = await db.query<{ pid: number }>(
        'SELECT pid FROM e2e_model_calls WHERE run = $1 UNION ALL SELECT pid FROM e2e_tool_runs WHERE split_part(key, $3, 1) = $2',
        ['api-e2e', invocationId, ':'],
      );
      expect(calls.length).toBe(3);
      expect(new Set(calls.map((c) => c.pid))).toEqual(new Set([worker?.pid]));
      expect(calls.some((c) => c.pid === api.child.pid)).toBe(false);

      const metrics = await (await fetch(`${base}/metrics`, { headers: AUTH })).text();
      expect(metrics).toMatch(/^agentloom_invocations\{app="confirm",status="completed"\} 1$/m);
    } finally {
      api.child.kill('SIGTERM');
      expect(await api.exited).toEqual({ code: 0, signal: null });
      expect(api.lines().some((l) => l.msg === 'api stopped')).toBe(true);
    }
  });
});
