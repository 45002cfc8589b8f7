/**
 * Auth of the HTTP API (CONTRACT.md): no key or a wrong key → 401 (probes excepted); a key sees only its apps, and
 * another app's invocation, session or app answers exactly as an unknown one (404, same code and message shape),
 * without changing anything; keys name the actor in the audit columns; without keys the server listens on
 * loopback only and says so.
 */
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FunctionTool, type Engine } from '../../src/index.js';
import { createApiServer, listenApi, type ApiApp } from '../../src/api/index.js';
import { queryRows } from '../../src/store/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

const KEYS = 'ops:ops-key-0123456789; writer:writer-key-0123456789:writer\nblogger:blog-key-0123456789:blog';
const OPS = { authorization: 'Bearer ops-key-0123456789' };
const WRITER = { authorization: 'Bearer writer-key-0123456789' };
const BLOGGER = { authorization: 'Bearer blog-key-0123456789' };

function pausingApp(name: string) {
  const publish = new FunctionTool({
    name: 'publish',
    description: 'publishes',
    requireConfirmation: true,
    execute: () => ({ published: true }),
  });
  return {
    name,
    agent: scripted(`${name}_agent`, (t) => (t.callIndex === 0 ? call('publish') : 'published'), {
      tools: [publish],
    }),
  };
}

describe('HTTP API auth', () => {
  let engine: Engine;
  let server: ApiApp;
  let base: string;
  let blogId: string;
  let blogSession: string;
  let blogCall: string;

  async function request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<{ status: number; text: string; headers: Headers }> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const response = await fetch(`${base}${path}`, init);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  beforeAll(async () => {
    engine = await engineOn(backends[0]!, { apps: [pausingApp('writer'), pausingApp('blog')] });
    server = await createApiServer({ engine, apiKeys: KEYS, processMetrics: false });
    base = await server.listen({ port: 0, host: '127.0.0.1' });
    const r = await request('POST', '/v1/apps/blog/invocations', BLOGGER, { userId: 'b', input: 'post it' });
    expect(r.status).toBe(202);
    ({ invocationId: blogId, sessionId: blogSession } = JSON.parse(r.text) as {
      invocationId: string;
      sessionId: string;
    });
    const paused = await engine.wait(blogId, { timeoutMs: 30_000 });
    blogCall = paused.pending[0]?.callId as string;
  });
  afterAll(async () => {
    await server?.close();
    await engine?.close();
  });

  it('answers 401 without a key or with a wrong one, on every route but the probes', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/apps'],
      ['GET', '/v1/apps/blog'],
      ['POST', '/v1/apps/blog/invocations', { userId: 'x', input: 'x' }],
      ['GET', '/v1/invocations'],
      ['GET', `/v1/invocations/${blogId}`],
      ['GET', `/v1/invocations/${blogId}/events`],
      ['GET', `/v1/invocations/${blogId}/nodes`],
      [
        'POST',
        `/v1/invocations/${blogId}/responses`,
        { functionResponses: [{ id: blogCall, response: {} }] },
      ],
      ['POST', `/v1/invocations/${blogId}/confirmations/${blogCall}`, { confirmed: true }],
      ['POST', `/v1/invocations/${blogId}/cancel`],
      ['POST', `/v1/invocations/${blogId}/retry`],
      ['GET', `/v1/sessions/${blogSession}`],
      ['GET', '/metrics'],
      ['GET', '/openapi.json'],
      ['GET', '/no/such/route'],
    ];
    const wrong: Record<string, string>[] = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: 'Bearer ops-key-012345678' },
      { authorization: 'ops-key-0123456789' },
    ];
    for (const [method, path, body] of routes) {
      for (const headers of wrong) {
        const r = await request(method, path, headers, body);
        expect(r.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(JSON.parse(r.text)).toMatchObject({
          error: { code: 'UNAUTHORIZED', details: { field: 'authorization' } },
        });
        expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }
    }
    expect((await request('GET', '/healthz')).status).toBe(200);
    expect((await request('GET', '/readyz')).status).toBe(200);
    // Nothing was answered or cancelled by the refused requests.
    expect(await engine.get(blogId)).toMatchObject({ status: 'paused', pending: [{ callId: blogCall }] });
  });

  it("answers another app's invocation, session and app exactly as unknown ones, changing nothing", async () => {
    const unknownId = 'inv_00000000-0000-4000-8000-000000000000';
    const same = async (
      method: string,
      path: (id: string) => string,
      known: string,
      unknown: string,
      body?: unknown,
    ) => {
      const mine = await request(method, path(known), WRITER, body);
      const other = await request(method, path(unknown), WRITER, body);
      expect(mine.status, path(known)).toBe(404);
      expect(mine.text.replaceAll(known, '<id>'), path(known)).toBe(other.text.replaceAll(unknown, '<id>'));
      expect(JSON.parse(mine.text)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    };
    await same('GET', (id) => `/v1/invocations/${id}`, blogId, unknownId);
    await same('GET', (id) => `/v1/invocations/${id}/events`, blogId, unknownId);
    await same('GET', (id) => `/v1/invocations/${id}/nodes`, blogId, unknownId);
    await same('POST', (id) => `/v1/invocations/${id}/cancel`, blogId, unknownId);
    await same('POST', (id) => `/v1/invocations/${id}/retry`, blogId, unknownId);
    await same('POST', (id) => `/v1/invocations/${id}/confirmations/${blogCall}`, blogId, unknownId, {
      confirmed: false,
    });
    await same('POST', (id) => `/v1/invocations/${id}/responses`, blogId, unknownId, {
      functionResponses: [{ id: blogCall, response: { confirmed: false } }],
    });
    await same('GET', (id) => `/v1/sessions/${id}`, blogSession, 'ses_00000000-0000-4000-8000-000000000000');
    await same('GET', (app) => `/v1/apps/${app}`, 'blog', 'bolg');
    await same('POST', (app) => `/v1/apps/${app}/invocations`, 'blog', 'bolg', { userId: 'w', input: 'x' });
    const sse = await fetch(`${base}/v1/invocations/${blogId}/events`, {
      headers: { ...WRITER, accept: 'text/event-stream' },
    });
    expect(sse.status).toBe(404);
    await sse.text();
    expect(await engine.get(blogId)).toMatchObject({ status: 'paused', pending: [{ callId: blogCall }] });
    const { invocations } = JSON.parse((await request('GET', '/v1/invocations', OPS)).text) as {
      invocations: { app: string }[];
    };
    expect(invocations.filter((i) => i.app === 'writer')).toHaveLength(0);
  });

  it('lists only the invocations and apps a key sees; /metrics needs a key that sees every app', async () => {
    const w = await request('POST', '/v1/apps/writer/invocations', WRITER, { userId: 'w', input: 'write' });
    expect(w.status).toBe(202);
    const list = async (headers: Record<string, string>, query = '') =>
      (
        JSON.parse((await request('GET', `/v1/invocations${query}`, headers)).text) as {
          invocations: { app: string }[];
        }
      ).invocations
        .map((i) => i.app)
        .sort();
    expect(await list(WRITER)).toEqual(['writer']);
    expect(await list(WRITER, '?app=blog')).toEqual([]);
    expect(await list(BLOGGER)).toEqual(['blog']);
    expect(await list(OPS)).toEqual(['blog', 'writer']);
    const apps = async (headers: Record<string, string>) =>
      (JSON.parse((await request('GET', '/v1/apps', headers)).text) as { apps: { name: string }[] }).apps.map(
        (a) => a.name,
      );
    expect(await apps(WRITER)).toEqual(['writer']);
    expect(await apps(OPS)).toEqual(['writer', 'blog']);
    const restricted = await request('GET', '/metrics', WRITER);
    const unknown = await request('GET', '/nometrics', WRITER);
    expect(restricted.status).toBe(404);
    expect(restricted.text.replace('/metrics', '<path>')).toBe(unknown.text.replace('/nometrics', '<path>'));
    expect((await request('GET', '/metrics', OPS)).status).toBe(200);
  });

  it("records the key's name as who enqueued and who answered", async () => {
    const r = await request('POST', `/v1/invocations/${blogId}/confirmations/${blogCall}`, BLOGGER, {
      confirmed: true,
    });
    expect(r.status).toBe(200);
    const [row] = await queryRows<{ created_by: string; answered_by: string }>(
      engine.store.db,
      sql`select i.created_by, t.answered_by from invocations i join tool_requests t on t.invocation_id = i.id
           where i.id = ${blogId}`,
    );
    expect(row).toEqual({ created_by: 'blogger', answered_by: 'blogger' });
  });

  it('without keys, needs none but listens on loopback only and logs that it does', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const logger = pino({ level: 'info' }, sink);
    const open = await createApiServer({ engine, logger, processMetrics: false });
    try {
      const url = await listenApi(open, { port: 0, authEnabled: false, logger });
      expect(new URL(url).hostname).toBe('127.0.0.1');
      expect(open.server.address()).toMatchObject({ address: '127.0.0.1' });
      expect(lines.some((l) => l.level === 40 && String(l.msg).includes('loopback only'))).toBe(true);
      const r = await fetch(`${url}/v1/apps`);
      expect(r.status).toBe(200);
    } finally {
      await open.close();
    }
  });
});
