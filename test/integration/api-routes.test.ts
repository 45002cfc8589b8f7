/**
 * Every route of the HTTP API (CONTRACT.md "HTTP API") over real HTTP against a real engine (its in-process
 * worker runs the steps), on PGlite and on PostgreSQL: enqueue, read, list with cursors, events as JSON, nodes,
 * answers (same answer again: 200 no-op; a different one: 409, also after the run ended), cancel, retry, apps,
 * sessions, and the error shape of bad input (400 naming the field), unknown ids (404), big bodies (413).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FunctionTool, SequentialAgent, type Engine } from '../../src/index.js';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

interface Reply {
  status: number;
  body: Record<string, unknown> & {
    error?: { code: string; message: string; details?: Record<string, unknown> };
  };
  headers: Headers;
}

function apps(flaky: { fail: boolean }) {
  const send = new FunctionTool({
    name: 'send',
    description: 'sends a mail',
    requireConfirmation: true,
    execute: (args: Record<string, unknown>) => ({ sent: args.to ?? null }),
  });
  const ticket = new FunctionTool({
    name: 'open_ticket',
    description: 'opens a ticket a human closes',
    isLongRunning: true,
    execute: () => ({ status: 'pending' }),
  });
  return [
    { name: 'echo', agent: scripted('echoer', (turn) => `echo ${turn.callIndex}`) },
    {
      name: 'mail',
      agent: new SequentialAgent({
        name: 'pipeline',
        subAgents: [
          scripted('writer', 'draft'),
          scripted('sender', (t) => (t.callIndex === 0 ? call('send', { to: 'bob' }) : 'sent'), {
            tools: [send],
          }),
        ],
      }),
    },
    {
      name: 'desk',
      agent: scripted('clerk', (t) => (t.callIndex === 0 ? call('open_ticket') : 'ticket closed'), {
        tools: [ticket],
      }),
    },
    {
      name: 'flaky',
      agent: scripted('wobbly', () => {
        if (flaky.fail) throw new Error('model exploded');
        return 'steady now';
      }),
    },
  ];
}

describe.each(backends)('HTTP API routes on $name', (backend) => {
  const flaky = { fail: true };
  let engine: Engine;
  let server: ApiApp;
  let base: string;

  async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    return {
      status: response.status,
      body: text === '' ? {} : (JSON.parse(text) as Reply['body']),
      headers: response.headers,
    } satisfies Reply;
  }

  async function enqueue(app: string, body: Record<string, unknown>): Promise<string> {
    const r = await request('POST', `/v1/apps/${app}/invocations`, body);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return r.body.invocationId as string;
  }

  beforeAll(async () => {
    engine = await engineOn(backend, { apps: apps(flaky) });
    server = await createApiServer({ engine, processMetrics: false });
    base = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
    await engine?.close();
  });

  it('enqueues (202), reads the invocation, its nodes, its events (JSON, after=, limit=) and its session', async () => {
    const r = await request('POST', '/v1/apps/echo/invocations', {
      userId: 'u1',
      input: 'hi',
      stateDelta: { topic: 'cats' },
    });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: 'queued', invocationId: expect.stringMatching(/^inv_/) });
    const id = r.body.invocationId as string;
    await engine.wait(id, { timeoutMs: 30_000 });

    const got = await request('GET', `/v1/invocations/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id,
      app: 'echo',
      userId: 'u1',
      status: 'completed',
      output: 'echo 0',
      pending: [],
      definitionHash: engine.apps.get('echo')?.definitionHash,
      // No caller's traceparent: the run's trace id is its id's UUID digits.
      traceId: id.replace(/^inv_/, '').replaceAll('-', ''),
    });
    expect(new Date(got.body.createdAt as string).getTime()).not.toBeNaN();

    const nodes = await request('GET', `/v1/invocations/${id}/nodes`);
    expect(nodes.body.nodes).toEqual([
      expect.objectContaining({ path: 'echoer', status: 'completed', attempt: 1 }),
    ]);

    const events = await request('GET', `/v1/invocations/${id}/events`);
    const list = events.body.events as { seq: number; author: string }[];
    expect(list.map((e) => e.author)).toEqual(['user', 'echoer']);
    expect(events.body.nextAfter).toBeNull();
    const first = list[0]?.seq as number;
    const after = await request('GET', `/v1/invocations/${id}/events?after=${first}`);
    expect((after.body.events as { seq: number }[]).map((e) => e.seq)).toEqual([list[1]?.seq]);
    const limited = await request('GET', `/v1/invocations/${id}/events?limit=1`);
    expect((limited.body.events as unknown[]).length).toBe(1);
    expect(limited.body.nextAfter).toBe(first);

    const session = await request('GET', `/v1/sessions/${got.body.sessionId as string}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ app: 'echo', userId: 'u1', state: { topic: 'cats' } });
    expect((session.body.events as unknown[]).length).toBe(2);
  });

  it('lists invocations newest first, filtered, a page at a time with an opaque cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueue('echo', { userId: 'lister', input: `n${i}` }));
    for (const id of ids) await engine.wait(id, { timeoutMs: 30_000 });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `/v1/invocations?userId=lister&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await request('GET', query);
      expect(page.status).toBe(200);
      const items = page.body.invocations as { id: string; userId: string }[];
      expect(items.length).toBeLessThanOrEqual(2);
      seen.push(...items.map((i) => i.id));
      cursor = page.body.nextCursor as string | null;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual([...ids].reverse());
    expect(pages).toBe(3);
    const filtered = await request(
      'GET',
      '/v1/invocations?app=echo&status=completed&userId=lister&limit=200',
    );
    expect((filtered.body.invocations as unknown[]).length).toBe(5);
    const none = await request('GET', '/v1/invocations?app=mail&userId=lister');
    expect(none.body).toEqual({ invocations: [], nextCursor: null });
    const bad = await request('GET', '/v1/invocations?cursor=bm90LWEtY3Vyc29y');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION', details: { field: 'cursor' } });
  });

  it('answers a confirmation: 200, the same answer again is a no-op 200, a different one 409 (also after the end)', async () => {
    const id = await enqueue('mail', { userId: 'u2', input: 'mail bob' });
    const paused = await engine.wait(id, { timeoutMs: 30_000 });
    expect(paused.status).toBe('paused');
    const got = await request('GET', `/v1/invocations/${id}`);
    const pending = (got.body.pending as { callId: string; kind: string; name: string }[])[0];
    expect(pending).toMatchObject({ kind: 'confirmation', name: 'send' });
    const path = `/v1/invocations/${id}/confirmations/${pending?.callId}`;

    const missing = await request('POST', path, { payload: 1 });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'VALIDATION', details: { field: 'confirmed' } });

    const ok = await request('POST', path, { confirmed: true });
    expect(ok.status).toBe(200);
    expect(ok.body.id).toBe(id);
    const again = await request('POST', path, { confirmed: true });
    expect(again.status).toBe(200);
    const conflict = await request('POST', path, { confirmed: false });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error?.code).toBe('CONFLICT');

    const done = await engine.wait(id, { timeoutMs: 30_000 });
    expect(done.status).toBe('completed');
    expect((await request('POST', path, { confirmed: true })).status).toBe(200);
    expect((await request('POST', path, { confirmed: false })).status).toBe(409);
    const viaResponses = await request('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [{ id: pending?.callId, response: { confirmed: false } }],
    });
    expect(viaResponses.status).toBe(409);
    const unknownCall = await request('POST', `/v1/invocations/${id}/confirmations/call_nope`, {
      confirmed: true,
    });
    expect(unknownCall.status).toBe(404);
  });

  it('answers a long-running call through /responses, refusing a whole request when one answer is wrong', async () => {
    const id = await enqueue('desk', { userId: 'u3', input: 'help' });
    const paused = await engine.wait(id, { timeoutMs: 30_000 });
    const callId = paused.pending[0]?.callId as string;
    expect(paused.pending[0]?.kind).toBe('long_running');
    const asConfirmation = await request('POST', `/v1/invocations/${id}/confirmations/${callId}`, {
      confirmed: true,
    });
    expect(asConfirmation.status).toBe(400);
    expect(asConfirmation.body.error?.details?.field).toBe('callId');
    // The second answer names no pending call: nothing of the request is stored.
    const mixed = await request('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: callId, response: { status: 'resolved' } },
        { id: 'call_unknown', response: { x: 1 } },
      ],
    });
    expect(mixed.status).toBe(404);
    expect((await engine.get(id)).pending).toHaveLength(1);
    const twice = await request('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: callId, response: { a: 1 } },
        { id: callId, response: { a: 2 } },
      ],
    });
    expect(twice.status).toBe(400);
    expect(twice.body.error?.details?.field).toBe('functionResponses.1.id');
    const ok = await request('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [{ id: callId, name: 'open_ticket', response: { status: 'resolved' } }],
    });
    expect(ok.status).toBe(200);
    expect((await engine.wait(id, { timeoutMs: 30_000 })).output).toBe('ticket closed');
  });

  it('cancels a paused run, retries a failed one, and refuses to retry a completed one (409)', async () => {
    const paused = await enqueue('mail', { userId: 'u4', input: 'x' });
    await engine.wait(paused, { timeoutMs: 30_000 });
    const cancelled = await request('POST', `/v1/invocations/${paused}/cancel`, '', {
      'content-type': 'application/json',
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', pending: [] });

    flaky.fail = true;
    const id = await enqueue('flaky', { userId: 'u4', input: 'x' });
    const failed = await engine.wait(id, { timeoutMs: 30_000 });
    expect(failed.status).toBe('failed');
    const got = await request('GET', `/v1/invocations/${id}`);
    expect(got.body.error).toMatchObject({ code: 'MODEL_ERROR' });
    flaky.fail = false;
    const retried = await request('POST', `/v1/invocations/${id}/retry`, { maxLlmCalls: 10 });
    expect(retried.status).toBe(200);
    expect(retried.body.maxLlmCalls).toBe(10);
    expect((await engine.wait(id, { timeoutMs: 30_000 })).output).toBe('steady now');
    const again = await request('POST', `/v1/invocations/${id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.error?.code).toBe('CONFLICT');
  });

  it('serves the agent trees of its apps with their definition hashes', async () => {
    const all = await request('GET', '/v1/apps');
    const names = (all.body.apps as { name: string }[]).map((a) => a.name);
    expect(names).toEqual(['echo', 'mail', 'desk', 'flaky']);
    const mail = await request('GET', '/v1/apps/mail');
    expect(mail.body).toEqual({
      name: 'mail',
      definitionHash: engine.apps.get('mail')?.definitionHash,
      root: {
        name: 'pipeline',
        kind: 'sequential',
        description: '',
        children: [
          { name: 'writer', kind: 'llm', description: '', tools: [], children: [] },
          { name: 'sender', kind: 'llm', description: '', tools: ['send'], children: [] },
        ],
      },
    });
  });

  it('honours idempotency keys: the same key answers the same invocation', async () => {
    const a = await enqueue('echo', { userId: 'u5', input: 'once', idempotencyKey: 'k-1' });
    const b = await enqueue('echo', { userId: 'u5', input: 'once', idempotencyKey: 'k-1' });
    expect(b).toBe(a);
  });

  it('answers bad input with 400 naming the field, unknown things with 404, big bodies with 413', async () => {
    const cases: [string, string, unknown, number, string, string?][] = [
      ['POST', '/v1/apps/echo/invocations', { input: 'x' }, 400, 'VALIDATION', 'userId'],
      ['POST', '/v1/apps/echo/invocations', { userId: 'u', input: 3 }, 400, 'VALIDATION', 'input'],
      [
        'POST',
        '/v1/apps/echo/invocations',
        { userId: 'u', input: 'x', maxLlmCalls: 0 },
        400,
        'VALIDATION',
        'maxLlmCalls',
      ],
      ['POST', '/v1/apps/echo/invocations', { userId: 'u', input: 'x', stateDetla: {} }, 400, 'VALIDATION'],
      [
        'POST',
        '/v1/apps/echo/invocations',
        { userId: 'u', input: 'x', stateDelta: { k: 'a\u0000b' } },
        400,
        'VALIDATION',
        'stateDelta.k',
      ],
      ['POST', '/v1/apps/echo/invocations', '{"userId": ', 400, 'VALIDATION', 'body'],
      ['POST', '/v1/apps/nope/invocations', { userId: 'u', input: 'x' }, 404, 'NOT_FOUND', 'app'],
      ['GET', '/v1/invocations/inv_missing', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/invocations/inv_missing/events', undefined, 404, 'NOT_FOUND'],
      ['POST', '/v1/invocations/inv_missing/cancel', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/sessions/ses_missing', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/apps/nope', undefined, 404, 'NOT_FOUND', 'app'],
      ['GET', '/v1/nothing-here', undefined, 404, 'NOT_FOUND'],
      ['GET', '/v1/invocations?limit=0', undefined, 400, 'VALIDATION', 'limit'],
      ['GET', '/v1/invocations?status=done', undefined, 400, 'VALIDATION', 'status'],
      ['GET', '/v1/invocations/x/events?after=-1', undefined, 400, 'VALIDATION', 'after'],
    ];
    for (const [method, path, body, status, code, field] of cases) {
      const r = await request(method, path, body);
      const what = `${method} ${path} ${JSON.stringify(body)} → ${JSON.stringify(r.body)}`;
      expect(r.status, what).toBe(status);
      expect(r.body.error?.code, what).toBe(code);
      expect(typeof r.body.error?.message, what).toBe('string');
      if (field) expect(r.body.error?.details?.field, what).toBe(field);
    }
    const big = await request('POST', '/v1/apps/echo/invocations', {
      userId: 'u',
      input: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(big.status).toBe(413);
    expect(big.body.error?.code).toBe('PAYLOAD_TOO_LARGE');
    const xml = await request('POST', '/v1/apps/echo/invocations', '<x/>', {
      'content-type': 'application/xml',
    });
    expect(xml.status).toBe(415);
    expect(xml.body.error?.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });
});
