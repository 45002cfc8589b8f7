/**
 * ADK's API-server routes, on PostgreSQL through a real API server, with adk-python 2.5's field names
 * and SSE framing: apps and version; sessions created (empty, null or full body; by path id), listed as a bare
 * array, read with their events, patched, deleted (not while a run is live); `/run_sse` streams `data:` blocks only,
 * without the caller's own message, until the run pauses, and a function response to the confirmation (snake_case
 * accepted) resumes the same invocation, the tool running once; `/run` answers the same events as an array; an
 * unknown session is 404 before anything is enqueued; the dev UI's graph and trace routes; keys as on /v1. `/version`
 * answers adk-python's keys (`language_version`), and every error of these routes is FastAPI's `{"detail": "…"}`
 * while /v1 keeps its own `{"error": {code, message}}`.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createEngine, SequentialAgent } from '../../src/index.js';
import { keysOutsideAdkModel } from '../support/assert/adk-event-model.js';
import { mailSender, scripted } from '../fixtures/agents.js';
import { apiClient } from '../support/client/http-client.js';
import { serveApi, serveEngine } from '../support/services/api-servers.js';
import { createTestDatabase } from '../support/services/services.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
type Json = any;

const KEY = 'adk-routes-key-0123456789';
let sends = 0;

/** The engine behind a server without keys, and behind a server with a key for `echo`. */
const open = serveEngine(
  async () => {
    const root = new SequentialAgent({
      name: 'pipeline',
      subAgents: [scripted('writer', 'a draft'), mailSender(() => sends++)],
    });
    return createEngine({
      apps: [
        { name: 'mail', agent: root },
        { name: 'echo', agent: scripted('echoer', 'echo') },
      ],
      database: await createTestDatabase(),
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
  },
  { processMetrics: false },
);
const keyed = serveApi(() => open.engine, { processMetrics: false, apiKeys: `echoes:${KEY}:echo` });

/** A client of the server without keys; SSE answers are read from `text`. */
const http = apiClient<Json>({ base: () => open.base });

/** The `data:` payloads of an SSE body; fails on any other kind of line. */
function dataBlocks(text: string): Json[] {
  const blocks = text.split('\n\n').filter((b) => b !== '');
  for (const block of blocks) expect(block, 'only data: lines').toMatch(/^data: [^\n]*$/);
  return blocks.map((b) => JSON.parse(b.slice('data: '.length)));
}

describe('apps and version', () => {
  it('lists app names as a bare array, and a key sees only its apps', async () => {
    expect((await http('GET', '/list-apps?relative_path=./')).body).toEqual(['mail', 'echo']);
    const keyedHttp = apiClient<Json>({ base: () => keyed.base });
    expect((await keyedHttp('GET', '/list-apps', undefined, { bearer: KEY })).body).toEqual(['echo']);
    expect((await keyedHttp('GET', '/list-apps')).status).toBe(401);
  });

  it("answers /version with adk-python's keys, as ADK's dev UI reads them", async () => {
    const { body: json } = await http('GET', '/version');
    expect(json).toMatchObject({
      version: expect.any(String),
      language: 'typescript',
      language_version: process.version,
    });
    expect(json).not.toHaveProperty('languageVersion');
  });
});

describe('errors', () => {
  it("answer FastAPI's {detail} on every ADK route, whatever refused the request", async () => {
    const big = JSON.stringify({ appName: 'echo', userId: 'u', sessionId: 's', pad: 'x'.repeat(2 << 20) });
    const answer = async (url: string, init: RequestInit = {}) => {
      const response = await fetch(url, init);
      return { status: response.status, json: (await response.json()) as Json };
    };
    const post = (body: string, type = 'application/json') =>
      answer(`${open.base}/run`, { method: 'POST', headers: { 'content-type': type }, body });
    const refusals: { status: number; answer: Promise<{ status: number; json: Json }> }[] = [
      // the route: an unknown session, an unknown app
      { status: 404, answer: answer(`${open.base}/apps/mail/users/bea/sessions/nope`) },
      { status: 404, answer: answer(`${open.base}/apps/nope/users/bea/sessions`) },
      // the body: a schema check, JSON that does not parse, a type not taken, a body too large
      { status: 400, answer: post(JSON.stringify({ appName: 'echo' })) },
      { status: 400, answer: post('{"appName":') },
      { status: 415, answer: post('<run/>', 'text/xml') },
      { status: 413, answer: post(big) },
      // a key: none sent
      { status: 401, answer: answer(`${keyed.base}/apps/echo/users/u/sessions`) },
    ];
    for (const refusal of refusals) {
      const { status, json } = await refusal.answer;
      expect({ status, json }).toEqual({ status: refusal.status, json: { detail: expect.any(String) } });
      expect(json.detail).not.toBe('');
    }
    // What is wrong is still said: the field of a schema check, the session not found.
    expect((await http('POST', '/run', { appName: 'echo' })).body.detail).toMatch(/^body\.userId: /);
    expect((await http('GET', '/apps/mail/users/bea/sessions/nope')).body).toEqual({
      detail: 'Session not found: nope',
    });
  });

  it('leave /v1 errors as they were: {error: {code, message, details?}}', async () => {
    const missing = await http('GET', '/v1/invocations/inv_nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      error: expect.objectContaining({ code: 'NOT_FOUND', message: expect.any(String) }),
    });
    const invalid = await http('POST', '/v1/apps/echo/invocations', { input: 'x' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: 'VALIDATION', details: { field: 'userId' } });
    const unknownRoute = await http('GET', '/v1/nowhere');
    expect(unknownRoute.body.error.code).toBe('NOT_FOUND');
  });
});

describe('sessions', () => {
  it('creates from an empty, a null or a full body, and by path id; a second create of an id is 400', async () => {
    const empty = await http('POST', '/apps/mail/users/ann/sessions');
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ appName: 'mail', userId: 'ann', state: {}, events: [] });
    expect(empty.body.id).toMatch(/^ses_/);
    expect(empty.body.lastUpdateTime).toBeLessThan(1e11);
    expect((await http('POST', '/apps/mail/users/ann/sessions', null)).status).toBe(200);
    const full = await http('POST', '/apps/mail/users/ann/sessions', {
      session_id: 'adk-full',
      state: { topic: 'mail' },
      unknownKey: true,
    });
    expect(full.body).toMatchObject({ id: 'adk-full', state: { topic: 'mail' } });
    const byPath = await http('POST', '/apps/mail/users/ann/sessions/adk-path', { state: { n: 1 } });
    expect(byPath.body).toMatchObject({ id: 'adk-path', state: { n: 1 } });
    const again = await http('POST', '/apps/mail/users/ann/sessions/adk-path', {});
    expect(again.status).toBe(400);
    expect(again.text).toContain('Session already exists: adk-path');
    const withEvents = await http('POST', '/apps/mail/users/ann/sessions', { events: [{ author: 'x' }] });
    expect(withEvents.status).toBe(400);
    expect(withEvents.body.detail).toMatch(/^events: /);
  });

  it('lists as a bare array without events; reads one with its events; another user’s is 404', async () => {
    const created = await http('POST', '/apps/mail/users/bea/sessions', { state: { k: 'v' } });
    const list = await http('GET', '/apps/mail/users/bea/sessions');
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body).toContainEqual(expect.objectContaining({ id: created.body.id, events: [] }));
    const one = await http('GET', `/apps/mail/users/bea/sessions/${created.body.id}`);
    expect(one.body).toMatchObject({
      id: created.body.id,
      appName: 'mail',
      userId: 'bea',
      state: { k: 'v' },
    });
    expect((await http('GET', `/apps/mail/users/someone/sessions/${created.body.id}`)).status).toBe(404);
    expect((await http('GET', `/apps/echo/users/bea/sessions/${created.body.id}`)).status).toBe(404);
    expect((await http('GET', '/apps/mail/users/bea/sessions/nope')).status).toBe(404);
  });

  it('patches state with a delta (an event records it) and deletes; a live run blocks deletion', async () => {
    const { body: session } = await http('POST', '/apps/mail/users/cy/sessions');
    const patched = await http('PATCH', `/apps/mail/users/cy/sessions/${session.id}`, {
      state_delta: { mood: 'good' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.state).toMatchObject({ mood: 'good' });
    expect(patched.body.events).toHaveLength(1);
    expect(patched.body.events[0]).toMatchObject({
      author: 'user',
      actions: { stateDelta: { mood: 'good' } },
    });
    // A run paused for confirmation is live: the session stays.
    await http('POST', '/run', {
      appName: 'mail',
      userId: 'cy',
      sessionId: session.id,
      newMessage: { role: 'user', parts: [{ text: 'mail bob' }] },
    });
    const refused = await http('DELETE', `/apps/mail/users/cy/sessions/${session.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain('cancel it first');
    const [paused] = (await open.engine.store.listSessions({ app: 'mail', userId: 'cy' })).map((s) => s.id);
    const inv = (await http('GET', `/v1/invocations?userId=cy`)).body.invocations[0];
    await open.engine.cancel(inv.id);
    expect((await http('DELETE', `/apps/mail/users/cy/sessions/${paused}`)).status).toBe(204);
    expect((await http('GET', `/apps/mail/users/cy/sessions/${paused}`)).status).toBe(404);
    expect((await http('DELETE', `/apps/mail/users/cy/sessions/${paused}`)).status).toBe(404);
  });
});

describe('/run_sse and /run', () => {
  it('streams data: blocks until the pause; the confirmation answer resumes the same invocation; the tool runs once', async () => {
    const { body: session } = await http('POST', '/apps/mail/users/dee/sessions');
    const before = sends;
    const first = await http('POST', '/run_sse', {
      appName: 'mail',
      userId: 'dee',
      sessionId: session.id,
      newMessage: { role: 'user', parts: [{ text: 'mail bob' }] },
      streaming: false,
    });
    expect(first.status).toBe(200);
    expect(first.type).toContain('text/event-stream');
    const events = dataBlocks(first.text);
    expect(events.map((e) => e.author)).not.toContain('user');
    for (const event of events) {
      expect(event).not.toHaveProperty('seq');
      expect(event).not.toHaveProperty('nodePath');
      expect(event.actions).not.toHaveProperty('appendToState');
      expect(event.actions).not.toHaveProperty('endInvocation');
      expect(keysOutsideAdkModel(event)).toEqual([]);
      expect(event.timestamp).toBeLessThan(1e11);
      // adk-python's node paths: every segment `name@run`.
      expect(event.nodeInfo.path).toMatch(/^[\w-]+@\d+(\/[\w-]+@\d+)*$/);
    }
    const ask = events.at(-1);
    const request_ = ask.content.parts[0].functionCall;
    expect(request_.name).toBe('adk_request_confirmation');
    expect(ask.longRunningToolIds).toEqual([request_.id]);
    const invocationId = ask.invocationId;
    expect((await open.engine.get(invocationId)).status).toBe('paused');

    // The dev UI answers with a function response (snake_case from a Python client works the same).
    const second = await http('POST', '/run_sse', {
      app_name: 'mail',
      user_id: 'dee',
      session_id: session.id,
      new_message: {
        role: 'user',
        parts: [
          {
            function_response: {
              id: request_.id,
              name: 'adk_request_confirmation',
              response: { confirmed: true },
            },
          },
        ],
      },
    });
    const rest = dataBlocks(second.text);
    expect(new Set(rest.map((e) => e.invocationId))).toEqual(new Set([invocationId]));
    expect(rest.some((e) => e.content?.parts?.[0]?.text === 'mail handled')).toBe(true);
    expect((await open.engine.get(invocationId)).status).toBe('completed');
    expect(sends - before).toBe(1);
    // The stored session holds the whole conversation.
    const stored = await http('GET', `/apps/mail/users/dee/sessions/${session.id}`);
    expect(stored.body.events[0]).toMatchObject({
      author: 'user',
      content: { parts: [{ text: 'mail bob' }] },
    });
  });

  it('/run answers the events as a JSON array', async () => {
    const { body: session } = await http('POST', '/apps/echo/users/eve/sessions');
    const run = await http('POST', '/run', {
      appName: 'echo',
      userId: 'eve',
      sessionId: session.id,
      newMessage: { parts: [{ text: 'hello' }] },
    });
    expect(run.status).toBe(200);
    expect(run.body).toHaveLength(1);
    expect(run.body[0]).toMatchObject({ author: 'echoer', content: { parts: [{ text: 'echo' }] } });
  });

  it('answers 404 for an unknown session before enqueueing, and 404 for a call no run waits on', async () => {
    const count = async () => (await http('GET', '/v1/invocations?limit=200')).body.invocations.length;
    const before = await count();
    const unknown = await http('POST', '/run_sse', {
      appName: 'echo',
      userId: 'eve',
      sessionId: 'no-such-session',
      newMessage: { parts: [{ text: 'x' }] },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Session not found: no-such-session' });
    expect(await count()).toBe(before);
    const { body: session } = await http('POST', '/apps/echo/users/eve/sessions');
    const stray = await http('POST', '/run', {
      appName: 'echo',
      userId: 'eve',
      sessionId: session.id,
      newMessage: {
        parts: [{ functionResponse: { id: 'confirm_nope', name: 'x', response: { confirmed: true } } }],
      },
    });
    expect(stray.status).toBe(404);
    expect(await count()).toBe(before);
  });
});

describe("the dev UI's routes", () => {
  it('serializes the agent tree, draws it as Graphviz text, and has no trace spans', async () => {
    const graph = await http('GET', '/dev/apps/mail/build_graph');
    expect(graph.body).toMatchObject({
      name: 'mail',
      root_agent: {
        name: 'pipeline',
        type: 'agent',
        sub_agents: [{ name: 'writer' }, { name: 'sender', tools: [{ name: 'send_mail', type: 'tool' }] }],
      },
    });
    const image = await http('GET', '/dev/apps/mail/build_graph_image?dark_mode=true');
    expect(image.body.dotSrc).toMatch(/^digraph agents \{/);
    expect(image.body.dotSrc).toContain('"pipeline" -> "pipeline/sender"');
    const sub = await http('GET', '/dev/apps/mail/build_graph_image?node=pipeline/sender');
    expect(sub.body['pipeline/sender'].dotSrc).toContain('send_mail');
    expect((await http('GET', '/dev/apps/mail/build_graph_image?node=nowhere')).status).toBe(404);
    expect((await http('GET', '/dev/apps/mail/debug/trace/session/abc')).body).toEqual([]);
    expect((await http('GET', '/builder/app/mail')).status).toBe(404);
  });
});

describe("a caller's trace context", () => {
  it("a traceparent on /run makes the run part of the caller's trace; a malformed one is ignored", async () => {
    const { body: session } = await http('POST', '/apps/echo/users/eve/sessions');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const body = {
      appName: 'echo',
      userId: 'eve',
      sessionId: session.id,
      newMessage: { parts: [{ text: 'hi' }] },
    };
    const traced = await http('POST', '/run', body, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(traced.status).toBe(200);
    const id = traced.body[0].invocationId as string;
    expect((await http('GET', `/v1/invocations/${id}`)).body.traceId).toBe(traceId);
    const malformed = await http('POST', '/run', body, { headers: { traceparent: '00-not-a-trace' } });
    expect(malformed.status).toBe(200);
    const other = malformed.body[0].invocationId as string;
    expect((await http('GET', `/v1/invocations/${other}`)).body.traceId).toBe(
      other.replace(/^inv_/, '').replaceAll('-', ''),
    );
  });
});
