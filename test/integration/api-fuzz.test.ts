/**
 * A seeded, deterministic fuzz of the HTTP API: 500+ malformed bodies, headers, paths, query strings and raw
 * HTTP requests. Every one must be refused with a 4xx in the API's error shape (never a 500, never a stack trace),
 * nothing may be written for any of them (rows counted and fingerprinted before and after), and the server must
 * still be healthy and serve a real run afterwards. The requests: test/fixtures/api-fuzz-cases.ts.
 */
import { request as httpRequest, Agent } from 'node:http';
import { connect } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/store/index.js';
import { echoConfirmApps } from '../fixtures/apps/echo-confirm-apps.js';
import {
  answerCases,
  AUTH,
  enqueueCases,
  headerCases,
  KEY,
  pathCases,
  prng,
  queryCases,
  RAW_REQUESTS,
  SEED,
  type FuzzCase,
} from '../fixtures/api-fuzz-cases.js';
import { serveEngine } from '../support/services/api-servers.js';
import { backends, engineOn } from '../support/services/engines.js';

const STACK = /\n\s+at\s|node_modules|\/work\/|\.ts:\d+|\bat (async )?[A-Za-z_.]+ \(/;

describe('HTTP API fuzz', () => {
  const api = serveEngine(() => engineOn(backends[0]!, { apps: echoConfirmApps() }), {
    apiKeys: `fuzzer:${KEY}`,
    processMetrics: false,
  });
  const port = () => Number(new URL(api.base).port);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });

  function send(c: FuzzCase): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: port(), method: c.method, path: c.path, headers: c.headers, agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(c.body);
    });
  }

  function sendRaw(bytes: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(port(), '127.0.0.1');
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => socket.destroy(), 5_000);
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString('latin1'));
      });
      socket.end(Buffer.from(bytes, 'latin1'));
    });
  }

  async function fingerprint(): Promise<unknown> {
    const [counts] = await queryRows<Record<string, number>>(
      api.engine.store.db,
      sql`select (select count(*)::int from sessions) as sessions, (select count(*)::int from events) as events,
                 (select count(*)::int from invocations) as invocations, (select count(*)::int from nodes) as nodes,
                 (select count(*)::int from tool_requests) as tool_requests, (select count(*)::int from app_states) as app_states,
                 (select count(*)::int from user_states) as user_states`,
    );
    const invocations = await queryRows(
      api.engine.store.db,
      sql`select id, status, max_llm_calls, updated_at from invocations order by id`,
    );
    const requests = await queryRows(
      api.engine.store.db,
      sql`select call_id, status, response, answered_by from tool_requests order by call_id`,
    );
    const sessions = await queryRows(
      api.engine.store.db,
      sql`select id, state, last_seq from sessions order by id`,
    );
    return { counts, invocations, requests, sessions };
  }

  afterAll(() => {
    agent.destroy();
  });

  it(`refuses ${'≥'}500 malformed requests with a 4xx in the error shape, writes nothing, and stays healthy`, async () => {
    // Runs in every state the fuzz needs: one paused, one answered and completed.
    const paused = (await api.engine.enqueue({ app: 'confirm', userId: 'f', input: 'go' })).invocationId;
    const answered = (await api.engine.enqueue({ app: 'confirm', userId: 'f', input: 'go' })).invocationId;
    const pausedView = await api.engine.wait(paused, { timeoutMs: 30_000 });
    const answeredCall = (await api.engine.wait(answered, { timeoutMs: 30_000 })).pending[0]
      ?.callId as string;
    await api.engine.confirm(answeredCall, { confirmed: true, invocationId: answered });
    await api.engine.wait(answered, { timeoutMs: 30_000 });
    const ids = { paused, answered, call: pausedView.pending[0]?.callId as string, answeredCall };

    const r = prng(SEED);
    const cases = [
      ...enqueueCases(r, 200),
      ...answerCases(r, 60, ids),
      ...pathCases(r, 90),
      ...queryCases(r, 90, paused),
      ...headerCases(r, 60, paused),
    ];
    const before = await fingerprint();
    const statuses = new Map<number, number>();
    for (const c of cases) {
      const res = await send(c).catch((err: unknown) => {
        throw new Error(`${c.what}: ${(err as Error).message}`);
      });
      const what = `${c.what} → ${res.status} ${res.text.slice(0, 300)}`;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      expect(res.status >= 400 && res.status < 500, what).toBe(true);
      expect(res.text, what).not.toMatch(STACK);
      const parsed = JSON.parse(res.text) as { error?: { code?: unknown; message?: unknown } };
      expect(typeof parsed.error?.code, what).toBe('string');
      expect(typeof parsed.error?.message, what).toBe('string');
    }
    for (const bytes of RAW_REQUESTS) {
      const answer = await sendRaw(bytes);
      const what = `raw ${JSON.stringify(bytes.slice(0, 60))} → ${answer.slice(0, 200)}`;
      // Either refused in the error shape, or the connection closed without an answer; never a 5xx or a stack.
      if (answer !== '') expect(answer, what).toMatch(/^HTTP\/1\.1 4\d\d /);
      expect(answer, what).not.toMatch(STACK);
      const body = answer.split('\r\n\r\n')[1];
      if (body) expect(JSON.parse(body), what).toMatchObject({ error: { code: expect.any(String) } });
    }
    expect(cases.length + RAW_REQUESTS.length).toBeGreaterThanOrEqual(500);
    expect(await fingerprint()).toEqual(before);
    // Refusals of every kind happened (not one error path answering everything).
    for (const status of [400, 401, 404, 409, 413, 415])
      expect(statuses.get(status), `status ${status}`).toBeGreaterThan(0);

    expect((await send({ what: 'healthz', method: 'GET', path: '/healthz' })).status).toBe(200);
    expect((await send({ what: 'readyz', method: 'GET', path: '/readyz' })).status).toBe(200);
    const ok = await send({
      what: 'a valid enqueue',
      method: 'POST',
      path: '/v1/apps/echo/invocations',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'after-fuzz', input: 'still there?' }),
    });
    expect(ok.status).toBe(202);
    const done = await api.engine.wait((JSON.parse(ok.text) as { invocationId: string }).invocationId, {
      timeoutMs: 30_000,
    });
    expect(done.output).toBe('echoed');
  });
});
