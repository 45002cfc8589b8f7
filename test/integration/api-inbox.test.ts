/**
 * The routes behind the console's inbox and audit trail, on PostgreSQL through a real API server:
 * `GET /v1/pending` lists the calls waiting across invocations, oldest first, only of the apps a key sees, with
 * filters and a bound; `GET /v1/invocations/:id/requests` is a run's audit trail (who answered, when, with what);
 * a 409 says who answered first; who answered is the key's name, or — on a server without keys only — the name a
 * client gives in `X-Agentloom-Actor`; nodes carry their parent, lease and times.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/index.js';
import { callsToolOnce, confirmedTool, longRunningTool } from '../fixtures/agents.js';
import { apiClient } from '../support/client/http-client.js';
import { serveApi, serveEngine } from '../support/services/api-servers.js';
import { createTestDatabase } from '../support/services/services.js';

const OPS = 'inbox-ops-key-0123456789';
const MAILERS = 'inbox-mailers-key-0123456789';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
type Json = any;

/** The engine behind a server with keys, and the same engine behind a server without keys. */
const keyed = serveEngine(
  async () => {
    const send = confirmedTool('send_mail', 'sends');
    const ticket = longRunningTool('open_ticket', 'opens a ticket', 'pending');
    return createEngine({
      apps: [
        {
          name: 'mail',
          agent: callsToolOnce('mailer', send, { args: { to: 'mailer' }, answer: () => 'done by mailer' }),
        },
        {
          name: 'desk',
          agent: callsToolOnce('clerk', ticket, { args: { to: 'clerk' }, answer: () => 'done by clerk' }),
        },
      ],
      database: await createTestDatabase(),
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
  },
  { processMetrics: false, apiKeys: `ops:${OPS} mailers:${MAILERS}:mail` },
);
const open = serveApi(() => keyed.engine, { processMetrics: false });

/** Clients of the keyed server as `ops`, as `mailers` and without a key, and of the server without keys. */
const asOps = apiClient<Json>({ base: () => keyed.base, bearer: OPS });
const asMailers = apiClient<Json>({ base: () => keyed.base, bearer: MAILERS });
const anonymous = apiClient<Json>({ base: () => keyed.base });
const onOpen = apiClient<Json>({ base: () => open.base });

/** Enqueues a run and waits for its pause. */
async function pausedRun(app: string): Promise<{ id: string; callId: string }> {
  const { invocationId } = await keyed.engine.enqueue({ app, userId: 'inbox-user', input: 'go' });
  const view = await keyed.engine.wait(invocationId, { timeoutMs: 30_000 });
  expect(view.status).toBe('paused');
  return { id: invocationId, callId: view.pending[0]?.callId as string };
}

describe('GET /v1/pending', () => {
  it('lists the calls waiting across runs, oldest first, each with its run; a key sees only its apps', async () => {
    const first = await pausedRun('mail');
    const second = await pausedRun('desk');
    const third = await pausedRun('mail');
    const all = await asOps('GET', '/v1/pending');
    expect(all.status).toBe(200);
    const ours = all.body.calls.filter((c: { invocationId: string }) =>
      [first.id, second.id, third.id].includes(c.invocationId),
    );
    expect(ours.map((c: { invocationId: string }) => c.invocationId)).toEqual([
      first.id,
      second.id,
      third.id,
    ]);
    expect(ours[0]).toMatchObject({
      callId: first.callId,
      kind: 'confirmation',
      name: 'send_mail',
      args: { to: 'mailer' },
      nodePath: 'mailer',
      invocationId: first.id,
      app: 'mail',
      userId: 'inbox-user',
      invocationStatus: 'paused',
    });
    expect(ours[1]).toMatchObject({ kind: 'long_running', name: 'open_ticket', app: 'desk' });
    expect(Date.parse(ours[0].since)).toBeLessThanOrEqual(Date.parse(ours[1].since));

    const mailers = await asMailers('GET', '/v1/pending');
    expect(new Set(mailers.body.calls.map((c: { app: string }) => c.app))).toEqual(new Set(['mail']));
    expect((await asMailers('GET', '/v1/pending?app=desk')).body.calls).toEqual([]);
    const desk = await asOps('GET', '/v1/pending?kind=long_running');
    expect(desk.body.calls.every((c: { kind: string }) => c.kind === 'long_running')).toBe(true);
    expect(desk.body.calls.some((c: { invocationId: string }) => c.invocationId === second.id)).toBe(true);
    const one = await asOps('GET', '/v1/pending?limit=1');
    expect(one.body).toMatchObject({ more: true });
    expect(one.body.calls).toHaveLength(1);
    expect((await anonymous('GET', '/v1/pending')).status).toBe(401);
    const bad = await asOps('GET', '/v1/pending?kind=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('kind');
  });
});

describe('GET /v1/invocations/:id/requests and who answered', () => {
  it("records the key's name, not the name a key holder claims; the call leaves the inbox", async () => {
    const run = await pausedRun('mail');
    const answer = await asMailers(
      'POST',
      `/v1/invocations/${run.id}/confirmations/${run.callId}`,
      { confirmed: true, payload: 'fine' },
      { headers: { 'x-agentloom-actor': 'someone else' } },
    );
    expect(answer.status).toBe(200);
    const trail = await asOps('GET', `/v1/invocations/${run.id}/requests`);
    expect(trail.status).toBe(200);
    expect(trail.body.requests).toMatchObject([
      {
        callId: run.callId,
        kind: 'confirmation',
        name: 'send_mail',
        args: { to: 'mailer' },
        status: 'answered',
        response: { confirmed: true, payload: 'fine' },
        answeredBy: 'mailers',
      },
    ]);
    const [request] = trail.body.requests;
    expect(Date.parse(request.answeredAt)).toBeGreaterThanOrEqual(Date.parse(request.createdAt));
    const pending = await asOps('GET', '/v1/pending');
    expect(pending.body.calls.some((c: { callId: string }) => c.callId === run.callId)).toBe(false);

    // A different answer after that: 409, saying who answered and when.
    const late = await asOps('POST', `/v1/invocations/${run.id}/confirmations/${run.callId}`, {
      confirmed: false,
    });
    expect(late.status).toBe(409);
    expect(late.body.error.message).toContain('already answered by mailers');
    expect(late.body.error.details).toMatchObject({ answeredBy: 'mailers', answeredAt: request.answeredAt });
  });

  it('answers 404 for a run of an app the key does not see', async () => {
    const run = await pausedRun('desk');
    const hidden = await asMailers('GET', `/v1/invocations/${run.id}/requests`);
    expect(hidden).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
  });

  it('records the name a client gives on a server without keys; a malformed name is not recorded', async () => {
    const named = await pausedRun('mail');
    const unnamed = await pausedRun('mail');
    const answer = (id: string, callId: string, actor: string) =>
      onOpen(
        'POST',
        `/v1/invocations/${id}/confirmations/${callId}`,
        { confirmed: true },
        { headers: { 'x-agentloom-actor': actor } },
      );
    expect((await answer(named.id, named.callId, 'Ada Lovelace')).status).toBe(200);
    expect((await answer(unnamed.id, unnamed.callId, 'x'.repeat(65))).status).toBe(200);
    const by = async (id: string) =>
      (await onOpen('GET', `/v1/invocations/${id}/requests`)).body.requests[0].answeredBy;
    expect(await by(named.id)).toBe('Ada Lovelace');
    expect(await by(unnamed.id)).toBeNull();
  });
});

describe('GET /v1/invocations/:id/nodes', () => {
  it('gives each node its parent, output, error, lease and times', async () => {
    const run = await pausedRun('desk');
    const { body } = await asOps('GET', `/v1/invocations/${run.id}/nodes`);
    expect(body.nodes).toHaveLength(1);
    const [node] = body.nodes;
    expect(node).toMatchObject({
      path: 'clerk',
      parentPath: null,
      status: 'paused',
      output: null,
      error: null,
    });
    // A paused node holds no lease.
    expect(node.lease).toBeNull();
    expect(Date.parse(node.updatedAt)).toBeGreaterThanOrEqual(Date.parse(node.createdAt));
  });
});
