/**
 * Users' stored tool credentials through the HTTP API, with API keys configured, on PostgreSQL: credentials stored
 * by answering `auth` pauses are listed for their user (app, key, type, dates — never the secret), by app too;
 * only a key that sees every app may list or delete them (an app-scoped key gets 403 and changes nothing; a server
 * without keys, on loopback, lets its caller); deleting one key or all of a user's leaves the others, and the
 * user's next run of that tool pauses for the credential again.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_CREDENTIAL } from '../../src/agents/llm/journal.js';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { createEngine, FunctionTool, type Engine } from '../../src/index.js';
import { callsToolOnce } from '../fixtures/agents.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { createTestDatabase } from '../support/services/services.js';

const ALICE_KEY = `planted-alice-key-${randomBytes(8).toString('hex')}`;
const ALICE_TOKEN = `planted-alice-token-${randomBytes(8).toString('hex')}`;
const BOB_KEY = `planted-bob-key-${randomBytes(8).toString('hex')}`;
const SECRETS = [ALICE_KEY, ALICE_TOKEN, BOB_KEY];
const KEYS = 'ops:ops-key-0123456789; scoped:scoped-key-0123456789:weather,mail';
const OPS = 'ops-key-0123456789';
const SCOPED = 'scoped-key-0123456789';

let engine: Engine;
let api: ApiApp;
let base: string;
const answers: string[] = [];

beforeAll(async () => {
  const weather = new FunctionTool({
    name: 'get_weather',
    description: 'needs an API key',
    auth: { authScheme: { type: 'apiKey', in: 'header', name: 'X-Api-Key' }, credentialKey: 'weather' },
    execute: () => ({ sunny: true }),
  });
  const mailbox = new FunctionTool({
    name: 'read_mail',
    description: 'needs a bearer token',
    auth: { authScheme: { type: 'http', scheme: 'bearer' }, credentialKey: 'mailbox' },
    execute: () => ({ unread: 2 }),
  });
  engine = await createEngine({
    apps: [
      { name: 'weather', agent: callsToolOnce('forecaster', weather, { answer: () => 'done' }) },
      { name: 'mail', agent: callsToolOnce('reader', mailbox, { answer: () => 'done' }) },
    ],
    database: await createTestDatabase(),
    queue: 'local',
    secretKey: randomBytes(32).toString('base64'),
    logger: pino({ level: 'silent' }),
  });
  api = await createApiServer({ engine, apiKeys: KEYS, processMetrics: false });
  base = await api.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await api?.close();
  await engine?.close();
});

/** The API as the ops key (which sees every app) calls it, unless a call names another key. */
const http = apiClient({ base: () => base, bearer: OPS, onAnswer: (text) => answers.push(text) });

/** Runs `app` for `userId` until it settles; returns the invocation as the API shows it. */
async function run(app: string, userId: string): Promise<Json> {
  const { body } = await http('POST', `/v1/apps/${app}/invocations`, { userId, input: 'go' });
  await engine.wait(body.invocationId as string, { timeoutMs: 60_000 });
  return (await http('GET', `/v1/invocations/${body.invocationId as string}`)).body;
}

/** Runs `app` for `userId`, answers its auth pause with `credential`, and waits for it to complete. */
async function storeCredential(app: string, userId: string, credential: Json): Promise<void> {
  const paused = await run(app, userId);
  expect(paused.status).toBe('paused');
  const [pending] = paused.pending as Json[];
  expect(pending).toMatchObject({ kind: 'auth' });
  const answered = await http('POST', `/v1/invocations/${paused.id as string}/responses`, {
    functionResponses: [
      { id: pending!.callId, name: REQUEST_CREDENTIAL, response: { exchangedAuthCredential: credential } },
    ],
  });
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  const done = await engine.wait(paused.id as string, { timeoutMs: 60_000 });
  expect(done.status).toBe('completed');
}

const list = async (query: string) => http('GET', `/v1/credentials?${query}`);

describe('credentials admin API', () => {
  beforeAll(async () => {
    await storeCredential('weather', 'alice', { authType: 'apiKey', apiKey: ALICE_KEY });
    await storeCredential('mail', 'alice', {
      authType: 'http',
      http: { scheme: 'bearer', credentials: { token: ALICE_TOKEN } },
    });
    await storeCredential('weather', 'bob', { authType: 'apiKey', apiKey: BOB_KEY });
  });

  it("lists a user's credentials, by app too, with keys and dates and never a secret", async () => {
    const all = await list('userId=alice');
    expect(all.status).toBe(200);
    expect(all.body.credentials).toEqual([
      {
        app: 'mail',
        userId: 'alice',
        credentialKey: 'mailbox',
        authType: 'http',
        expiresAt: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
      expect.objectContaining({
        app: 'weather',
        userId: 'alice',
        credentialKey: 'weather',
        authType: 'apiKey',
      }),
    ]);
    expect((await list('userId=alice&app=weather')).body.credentials).toEqual([
      expect.objectContaining({ app: 'weather', credentialKey: 'weather' }),
    ]);
    expect((await list('userId=bob')).body.credentials).toEqual([
      expect.objectContaining({ app: 'weather', userId: 'bob', credentialKey: 'weather' }),
    ]);
    expect((await list('userId=nobody')).body).toEqual({ credentials: [] });
    for (const text of answers) for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(JSON.stringify(all.body)).not.toMatch(/secret/i);
  });

  it('answers 403 to a key that sees only some apps and 401 without a key, changing nothing', async () => {
    for (const [method, path] of [
      ['GET', '/v1/credentials?userId=alice'],
      ['DELETE', '/v1/credentials?userId=alice'],
      ['DELETE', '/v1/credentials?userId=alice&app=weather&credentialKey=weather'],
    ] as const) {
      const scoped = await http(method, path, undefined, { bearer: SCOPED });
      expect(scoped.status, `${method} ${path}`).toBe(403);
      expect(scoped.body.error).toMatchObject({
        code: 'FORBIDDEN',
        message: expect.stringContaining('a key that sees every app'),
      });
      expect((await http(method, path, undefined, { bearer: '' })).status).toBe(401);
    }
    expect(((await list('userId=alice')).body.credentials as Json[]).length).toBe(2);
  });

  it('refuses a missing or malformed query with 400 naming the field', async () => {
    const missing = await list('app=weather');
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({
      code: 'VALIDATION',
      message: 'querystring.userId: name the user whose credentials these are: ?userId=U',
      details: { field: 'userId', location: 'querystring' },
    });
    const badApp = await http('DELETE', '/v1/credentials?userId=alice&app=no%20such');
    expect(badApp.status).toBe(400);
    expect(badApp.body.error).toMatchObject({ details: { field: 'app' } });
    const unknown = await list('userId=alice&user=bob');
    expect(unknown.status).toBe(400);
  });

  it("deletes one key, then all of a user's; the others stay and the next run asks again", async () => {
    const one = 'userId=alice&app=weather&credentialKey=weather';
    expect((await http('DELETE', `/v1/credentials?${one}`)).body).toEqual({ deleted: 1 });
    expect((await http('DELETE', `/v1/credentials?${one}`)).body).toEqual({ deleted: 0 });
    expect((await list('userId=alice')).body.credentials).toEqual([
      expect.objectContaining({ app: 'mail', credentialKey: 'mailbox' }),
    ]);

    // alice's weather run asks for her key again; bob's still has his.
    const again = await run('weather', 'alice');
    expect(again.status).toBe('paused');
    expect((again.pending as Json[])[0]).toMatchObject({ kind: 'auth', auth: { credentialKey: 'weather' } });
    expect((await run('weather', 'bob')).status).toBe('completed');

    expect((await http('DELETE', '/v1/credentials?userId=alice')).body).toEqual({ deleted: 1 });
    expect((await list('userId=alice')).body.credentials).toEqual([]);
    expect((await run('mail', 'alice')).status).toBe('paused');
    expect(((await list('userId=bob')).body.credentials as Json[]).length).toBe(1);
  });

  it('lets any caller of a server without keys (loopback only) manage credentials', async () => {
    const open = await createApiServer({ engine, processMetrics: false });
    try {
      const listed = await open.inject({ method: 'GET', url: '/v1/credentials?userId=bob' });
      expect(listed.statusCode).toBe(200);
      expect((listed.json() as Json).credentials).toEqual([
        expect.objectContaining({ app: 'weather', userId: 'bob' }),
      ]);
      const deleted = await open.inject({ method: 'DELETE', url: '/v1/credentials?userId=bob&app=weather' });
      expect(deleted.json()).toEqual({ deleted: 1 });
    } finally {
      await open.close();
    }
  });
});
