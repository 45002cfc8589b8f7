/**
 * `agentloom api` as a real process with two real `agentloom worker` processes on PostgreSQL + Redis, API keys on:
 *
 * - a run driven only through HTTP — enqueued with a key, followed over SSE until it pauses for confirmation,
 *   confirmed, followed again with Last-Event-ID until it completes (every event exactly once) — while the API
 *   process itself runs no step;
 * - the example app's flow of `agentloom dev` (live SSE with branch labels, a disconnect and a Last-Event-ID
 *   reconnect, the pause confirmed on a stream that stays open, completion);
 * - every client command of the CLI against it, with exit codes (the api + worker half; the `dev`
 *   half is in dev-server.test.ts), and a wrong key refused with one plain line;
 * - a 24 MiB POST to every route that takes a body answered 413 in the error shape to Node's http client and to
 *   fetch (both stream the body: the API reads and drops the rest instead of closing under them), nothing
 *   written, the API healthy after.
 *
 * SIGTERM stops the API with exit code 0. Leases are long (30 s): nothing here is killed, and a busy machine must
 * not make a step look abandoned.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileServices } from '../support/processes/cluster.js';
import { freePort, REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import {
  approveScenario,
  cancelScenario,
  rejectScenario,
  respondScenario,
  retryScenario,
  type CliTarget,
} from '../support/scenarios/cli-scenarios.js';
import { postWithFetch, postWithHttp, type BigPostResult } from '../support/client/big-body.js';
import { exampleRunOverSse } from '../support/scenarios/example-flow.js';
import { waitFor } from '../support/assert/wait-for.js';

const KEY = 'e2e-ops-key-0123456789';
const AUTH = { authorization: `Bearer ${KEY}` };
const SERVICE_APPS = join(REPO, 'test/e2e/fixtures/service-apps.ts');
const LEASE_MS = 30_000;

const { options, db } = await fileServices({ leaseMs: LEASE_MS });

/** Parsed JSON log lines of a process (other lines skipped). */
function logLines(process: ServerProcess): Record<string, unknown>[] {
  return process.stdout.split('\n').flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
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

describe('agentloom api + two agentloom workers', () => {
  const services = {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    AGENTLOOM_QUEUE_PREFIX: options.prefix,
    LOG_LEVEL: 'info',
  };
  let api: ServerProcess;
  let workers: ServerProcess[];
  let base: string;
  const target = {} as CliTarget;

  beforeAll(async () => {
    const port = await freePort();
    api = new ServerProcess(['api', '--port', String(port), '--apps', SERVICE_APPS], {
      ...services,
      AGENTLOOM_API_KEYS: `ops:${KEY}`,
    });
    workers = [1, 2].map(
      () =>
        new ServerProcess(
          ['worker', '--apps', SERVICE_APPS, '--queue', 'redis', '--lease-ms', String(LEASE_MS)],
          services,
        ),
    );
    await Promise.all([
      api.waitForOutput(/"msg":"api listening"/, { timeoutMs: 170_000, what: 'the api to listen' }),
      ...workers.map((w) =>
        w.waitForOutput(/"msg":"worker started"/, { timeoutMs: 170_000, what: 'a worker to start' }),
      ),
    ]);
    base = `http://127.0.0.1:${port}`;
    Object.assign(target, { url: base, apiKey: KEY });
  }, 180_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
  });

  /** Rows of every table a request could write, and the latest update of a run or a node. */
  async function written(): Promise<Record<string, unknown>> {
    const { rows } = await db.query(
      `SELECT (SELECT count(*) FROM invocations) AS invocations, (SELECT count(*) FROM sessions) AS sessions,
              (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM nodes) AS nodes,
              (SELECT count(*) FROM tool_requests) AS tool_requests,
              (SELECT max(updated_at) FROM invocations) AS invocation_update,
              (SELECT max(updated_at) FROM nodes) AS node_update`,
    );
    return rows[0] as Record<string, unknown>;
  }

  it('answers a 24 MiB POST on every body route with 413 to node:http and fetch alike; writes nothing', async () => {
    const created = await fetch(`${base}/v1/apps/mail/invocations`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'e2e', input: 'mail bob' }),
    });
    expect(created.status).toBe(202);
    const { invocationId: id } = (await created.json()) as { invocationId: string };
    const read = async () =>
      (await (await fetch(`${base}/v1/invocations/${id}`, { headers: AUTH })).json()) as {
        status: string;
        pending: { callId: string }[];
      };
    const paused = await waitFor(async () => ((await read()).status === 'paused' ? read() : undefined), {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: 'the mail run to pause',
    });
    const callId = paused.pending[0]?.callId as string;
    const before = await written();

    // JSON of 24 MiB: a string no route takes past the 1 MiB limit.
    const big = Buffer.from(JSON.stringify({ userId: 'e2e', input: 'x'.repeat(24 * 1024 * 1024) }));
    const routes = [
      '/v1/apps/mail/invocations',
      `/v1/invocations/${id}/responses`,
      `/v1/invocations/${id}/confirmations/${callId}`,
      `/v1/invocations/${id}/cancel`,
      `/v1/invocations/${id}/retry`,
    ];
    const results: (BigPostResult & { route: string })[] = [];
    // Twice each: a server that stops reading too early breaks some of them, not always the same ones.
    for (const route of [...routes, ...routes]) {
      for (const post of [postWithHttp, postWithFetch]) {
        results.push({ route, ...(await post(`${base}${route}`, big, AUTH)) });
      }
    }
    // Every client read the answer (all listed at once when some did not: which client, which route, what error).
    const broken = results.filter((r) => r.status !== 413 || r.error !== undefined);
    expect(broken).toEqual([]);
    for (const result of results) {
      expect(result, JSON.stringify(result)).toEqual({
        route: result.route,
        client: result.client,
        status: 413,
        body: {
          error: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String), details: { field: 'body' } },
        },
      });
    }
    // Refused before its body is read (no key): the client reads that answer too.
    for (const post of [postWithHttp, postWithFetch]) {
      const denied = await post(`${base}/v1/apps/mail/invocations`, big);
      expect(denied, JSON.stringify(denied)).toMatchObject({
        status: 401,
        body: { error: { code: 'UNAUTHORIZED' } },
      });
      expect(denied.error).toBeUndefined();
    }

    // Nothing written: no invocation, session, event, node or tool request, no update; the run waits as it was.
    expect(await written()).toEqual(before);
    expect(await read()).toEqual(paused);
    // Healthy: the probes answer, and so does a small request on the same server.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const cancelled = await fetch(`${base}/v1/invocations/${id}/cancel`, { method: 'POST', headers: AUTH });
    expect(cancelled.status).toBe(200);
    expect((await read()).status).toBe('cancelled');
  });

  it('drives a run through HTTP: enqueue, SSE to the pause, confirm, SSE resumed to completion', async () => {
    const listening = logLines(api).find((l) => l.msg === 'api listening') as { url: string; auth: string };
    expect(listening.auth).toBe('keys');
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/v1/apps`)).status).toBe(401);

    const created = await fetch(`${base}/v1/apps/confirm/invocations`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'e2e', input: 'publish it', stateDelta: { run: 'api-e2e' } }),
    });
    expect(created.status).toBe(202);
    const { invocationId } = (await created.json()) as { invocationId: string };

    // Follow until the run settles: it pauses for the confirmation of `publish` (stay=0: the stream ends there).
    const first = await readStream(
      await fetch(`${base}/v1/invocations/${invocationId}/events?stay=0`, {
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
        headers: { ...AUTH, accept: 'text/event-stream', 'last-event-id': firstEvents.at(-1)?.id as string },
      }),
    );
    expect(JSON.parse(second.at(-1)?.data ?? '{}')).toMatchObject({ status: 'completed' });
    const seqs = [...firstEvents, ...second.filter((m) => m.id !== undefined)].map((m) => Number(m.id));
    const listed = (await (
      await fetch(`${base}/v1/invocations/${invocationId}/events`, { headers: AUTH })
    ).json()) as {
      events: { seq: number; author: string }[];
    };
    expect(seqs).toEqual(listed.events.map((e) => e.seq));
    const done = (await (
      await fetch(`${base}/v1/invocations/${invocationId}`, { headers: AUTH })
    ).json()) as {
      status: string;
      output: string;
    };
    expect(done).toMatchObject({ status: 'completed', output: 'approver done' });

    // The workers ran every model and tool call; the API process none.
    const { rows: calls } = await db.query<{ pid: number }>(
      'SELECT pid FROM e2e_model_calls WHERE run = $1 UNION ALL SELECT pid FROM e2e_tool_runs WHERE split_part(key, $3, 1) = $2',
      ['api-e2e', invocationId, ':'],
    );
    expect(calls.length).toBe(3);
    const workerPids = new Set(workers.map((w) => w.child.pid));
    for (const call of calls) expect(workerPids.has(call.pid)).toBe(true);
    expect(calls.some((c) => c.pid === api.child.pid)).toBe(false);

    const metrics = await (await fetch(`${base}/metrics`, { headers: AUTH })).text();
    expect(metrics).toMatch(/^agentloom_invocations\{app="confirm",status="completed"\} 1$/m);
  });

  it('runs the example app: live SSE with branches, reconnect, pause, confirm, completion', async () => {
    await exampleRunOverSse(base, AUTH);
  });

  it('CLI: run, events --follow (3 at the pause), status, approve --payload, events --follow (0)', () =>
    approveScenario(target));
  it('CLI: run --follow (3), reject, events --follow (0)', () => rejectScenario(target));
  it('CLI: respond answers a long-running call', () => respondScenario(target));
  it('CLI: cancel stops a tool running on a worker; events --follow exits 1', () => cancelScenario(target));
  it('CLI: a failed run: run --follow exits 1; retry; events --follow exits 0', () => retryScenario(target));

  it('CLI: a wrong key is refused with one plain line saying how to send one (exit 1)', async () => {
    const denied = await runCli(['status', 'inv_x', '--url', base, '--api-key', 'not-the-key']);
    expect(denied.code, show(denied)).toBe(1);
    expect(denied.stderr.trim()).toMatch(
      /^agentloom: UNAUTHORIZED: .*\(the CLI sends --api-key or AGENTLOOM_API_KEY\)$/,
    );
  });

  it('stops the API on SIGTERM with exit code 0', async () => {
    expect(await api.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(logLines(api).some((l) => l.msg === 'api stopped')).toBe(true);
  });
});
