/**
 * The auth gate for API-key and HTTP bearer tools, through the HTTP API on PostgreSQL: a call
 * pauses with kind `auth` and an ADK-shaped `adk_request_credential` event without secrets; the user's answer
 * (ADK's function response with `exchangedAuthCredential`) goes to the encrypted credentials table; the tool sees
 * the credential and runs once; a later run of the same user reuses it without a pause, another user pauses for
 * their own; confirmation comes before auth. Then a scan: no planted secret in any row of events, sessions,
 * invocations or tool_requests, in any API answer, or in the log; the credentials table holds only ciphertext.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { REQUEST_CREDENTIAL } from '../../src/agents/llm/journal.js';
import { createEngine, FunctionTool, type Engine } from '../../src/index.js';
import { callsToolOnce } from '../fixtures/agents.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { expectNoSecrets, scannedRows } from '../support/assert/secret-scan.js';
import { createTestDatabase } from '../support/services/services.js';

const API_KEY = `planted-api-key-${randomBytes(8).toString('hex')}`;
const OTHER_KEY = `planted-other-key-${randomBytes(8).toString('hex')}`;
const TOKEN = `planted-bearer-${randomBytes(8).toString('hex')}`;
const SECRETS = [API_KEY, OTHER_KEY, TOKEN];
const SECRET_KEY = randomBytes(32).toString('base64');

let engine: Engine;
let api: ApiApp;
let base: string;
const logLines: string[] = [];
const answers: string[] = [];
/** What each tool run saw, in order. */
const seen: { tool: string; user: string; credential: unknown }[] = [];

beforeAll(async () => {
  const weather = new FunctionTool({
    name: 'get_weather',
    description: 'needs an API key',
    auth: { authScheme: { type: 'apiKey', in: 'header', name: 'X-Api-Key' }, credentialKey: 'weather' },
    execute: (_args, ctx) => {
      seen.push({ tool: 'get_weather', user: ctx.invocationId, credential: ctx.credential });
      return { sunny: true };
    },
  });
  const mailbox = new FunctionTool({
    name: 'read_mail',
    description: 'needs a bearer token, after a confirmation',
    requireConfirmation: true,
    auth: { authScheme: { type: 'http', scheme: 'bearer' } },
    execute: (_args, ctx) => {
      seen.push({ tool: 'read_mail', user: ctx.invocationId, credential: ctx.credential });
      return { unread: 2 };
    },
  });
  const stream = { write: (line: string) => void logLines.push(line) };
  engine = await createEngine({
    apps: [
      { name: 'weather', agent: callsToolOnce('forecaster', weather) },
      { name: 'mail', agent: callsToolOnce('reader', mailbox) },
    ],
    database: await createTestDatabase(),
    queue: 'local',
    secretKey: SECRET_KEY,
    logger: pino({ level: 'trace' }, stream),
  });
  api = await createApiServer({ engine, processMetrics: false, logger: pino({ level: 'trace' }, stream) });
  base = await api.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await api?.close();
  await engine?.close();
});

const http = apiClient({ base: () => base, onAnswer: (text) => answers.push(text) });

async function start(app: string, userId: string): Promise<string> {
  const { body } = await http('POST', `/v1/apps/${app}/invocations`, { userId, input: 'go' });
  return body.invocationId as string;
}

async function settled(id: string): Promise<Json> {
  await engine.wait(id, { timeoutMs: 60_000 });
  return (await http('GET', `/v1/invocations/${id}`)).body;
}

function answer(id: string, callId: string, response: Json) {
  return http('POST', `/v1/invocations/${id}/responses`, {
    functionResponses: [{ id: callId, name: REQUEST_CREDENTIAL, response }],
  });
}

describe('the auth gate', () => {
  it('pauses an API-key tool for the user, stores the key encrypted, runs the tool once with it', async () => {
    const id = await start('weather', 'alice');
    const paused = await settled(id);
    expect(paused.status).toBe('paused');
    const [pending] = paused.pending as Json[];
    expect(pending).toMatchObject({
      kind: 'auth',
      name: 'get_weather',
      auth: { authScheme: { type: 'apiKey', in: 'header', name: 'X-Api-Key' }, credentialKey: 'weather' },
    });
    expect(seen).toEqual([]);
    // The ADK-shaped request event.
    const events = (await http('GET', `/v1/invocations/${id}/events`)).body.events as Json[];
    const request = events
      .flatMap((e) => ((e.content as { parts?: Json[] } | undefined)?.parts ?? []) as Json[])
      .find((p) => (p.functionCall as Json | undefined)?.name === REQUEST_CREDENTIAL)?.functionCall as Json;
    expect(request).toMatchObject({
      id: pending!.callId,
      args: { functionCallId: pending!.originalCallId, authConfig: { credentialKey: 'weather' } },
    });

    // A wrong shape is refused, naming the field; nothing is stored.
    const wrong = await answer(id, pending!.callId as string, {
      exchangedAuthCredential: { authType: 'http', http: { scheme: 'bearer', credentials: { token: 'x' } } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ details: { field: 'response.exchangedAuthCredential' } });

    const ok = await answer(id, pending!.callId as string, {
      exchangedAuthCredential: { authType: 'apiKey', apiKey: API_KEY },
    });
    expect(ok.status).toBe(200);
    const done = await settled(id);
    expect(done.status).toBe('completed');
    expect(seen).toEqual([
      { tool: 'get_weather', user: id, credential: { authType: 'apiKey', apiKey: API_KEY } },
    ]);
    const trail = (await http('GET', `/v1/invocations/${id}/requests`)).body.requests as Json[];
    expect(trail).toMatchObject([
      {
        kind: 'auth',
        status: 'answered',
        response: { credentialKey: 'weather', authType: 'apiKey', stored: true },
      },
    ]);
  });

  it("reuses the user's credential in a later run without a pause; another user pauses for their own", async () => {
    const again = await start('weather', 'alice');
    expect((await settled(again)).status).toBe('completed');
    expect(seen.at(-1)).toEqual({
      tool: 'get_weather',
      user: again,
      credential: { authType: 'apiKey', apiKey: API_KEY },
    });

    const bob = await start('weather', 'bob');
    const paused = await settled(bob);
    expect(paused.status).toBe('paused');
    const [pending] = paused.pending as Json[];
    await answer(bob, pending!.callId as string, {
      exchangedAuthCredential: { authType: 'apiKey', apiKey: OTHER_KEY },
    });
    expect((await settled(bob)).status).toBe('completed');
    expect(seen.at(-1)).toEqual({
      tool: 'get_weather',
      user: bob,
      credential: { authType: 'apiKey', apiKey: OTHER_KEY },
    });
  });

  it('asks for confirmation first, then the token: a rejected call never asks for a credential', async () => {
    const rejected = await start('mail', 'carol');
    const first = await settled(rejected);
    expect((first.pending as Json[])[0]).toMatchObject({ kind: 'confirmation' });
    await http(
      'POST',
      `/v1/invocations/${rejected}/confirmations/${(first.pending as Json[])[0]!.callId as string}`,
      {
        confirmed: false,
      },
    );
    expect((await settled(rejected)).status).toBe('completed');

    const id = await start('mail', 'carol');
    const confirm = await settled(id);
    await http(
      'POST',
      `/v1/invocations/${id}/confirmations/${(confirm.pending as Json[])[0]!.callId as string}`,
      {
        confirmed: true,
      },
    );
    const paused = await settled(id);
    expect((paused.pending as Json[])[0]).toMatchObject({ kind: 'auth', name: 'read_mail' });
    const callId = (paused.pending as Json[])[0]!.callId as string;
    await answer(id, callId, {
      exchangedAuthCredential: {
        authType: 'http',
        http: { scheme: 'bearer', credentials: { token: TOKEN } },
      },
    });
    expect((await settled(id)).status).toBe('completed');
    expect(seen.filter((s) => s.tool === 'read_mail')).toEqual([
      {
        tool: 'read_mail',
        user: id,
        credential: { authType: 'http', http: { scheme: 'bearer', credentials: { token: TOKEN } } },
      },
    ]);
  });

  it('leaves no planted secret in any row, API answer or log line; the credentials table holds ciphertext', async () => {
    await http('GET', '/metrics');
    const rows = await scannedRows(engine);
    expect(rows.length).toBeGreaterThan(20);
    const credentialRows = rows.filter((r) => r.t === 'credentials');
    expect(credentialRows).toHaveLength(3);
    expectNoSecrets(SECRETS, { rows, answers, logLines });
    expect(logLines.length).toBeGreaterThan(10);
  });
});
