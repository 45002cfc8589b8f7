/**
 * The OAuth2 redirect target (`GET /v1/auth/callback`) given what a provider — or a user's browser — may send it
 * instead of one state and one code: no code, an empty one, a code or a state twice, the provider's
 * `error` with and without `error_description`, another issuer (`iss`), the state of another app's call with this
 * app's code, and a token endpoint that cannot be reached. Each answers a page saying what is wrong (400; 502 for
 * the unreachable provider), never a 500; nothing is redeemed or stored, the call keeps waiting, and its
 * authorization URL works afterwards. The same checks hold for the callback URL pasted as a function response
 * (`authResponseUri`). On PostgreSQL, through the HTTP API, against a local provider
 * (examples/oauth2/fake-provider.ts).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { REQUEST_CREDENTIAL } from '../../src/agents/llm/journal.js';
import { createEngine, FunctionTool, type Engine, type ToolAuth } from '../../src/index.js';
import { FakeOAuthServer } from '../../examples/oauth2/fake-provider.js';
import { call, scripted } from '../fixtures/agents.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { freePort } from '../support/services/local-services.js';
import { createTestDatabase } from '../support/services/services.js';

const provider = new FakeOAuthServer();
const calendarClient = provider.addClient('calendar-app');
const mailClient = provider.addClient('mail-app');
let engine: Engine;
let api: ApiApp;
let base: string;
/** The API's log (the callback route logs at warn whatever the level: refusals say why there). */
const logLines: string[] = [];

/** An authorization-code config for a client of the provider (`tokenUrl`: the provider's, unless given). */
function codeAuth(client: { id: string; secret: string }, key: string, tokenUrl?: string): ToolAuth {
  return {
    authScheme: {
      type: 'oauth2',
      flows: {
        authorizationCode: {
          authorizationUrl: `${provider.url}/authorize`,
          tokenUrl: tokenUrl ?? `${provider.url}/token`,
          scopes: { read: 'read' },
        },
      },
    },
    rawAuthCredential: { authType: 'oauth2', oauth2: { clientId: client.id, clientSecret: client.secret } },
    credentialKey: key,
  };
}

/** An app whose one agent calls one tool needing `auth`, once. */
function appWith(name: string, auth: ToolAuth) {
  const tool = new FunctionTool({
    name: `read_${name}`,
    description: 'reads with the user credential',
    auth,
    execute: async () => ({ ok: true }),
  });
  const agent = scripted(`${name}_agent`, (turn) => (turn.callIndex === 0 ? call(tool.name) : 'done'), {
    tools: [tool],
  });
  return { name, agent };
}

beforeAll(async () => {
  await provider.start();
  const port = await freePort();
  // A token URL where nothing listens: the exchange cannot reach the provider.
  const nowhere = `http://127.0.0.1:${await freePort()}/token`;
  engine = await createEngine({
    apps: [
      appWith('calendar', codeAuth(calendarClient, 'calendar')),
      appWith('mail', codeAuth(mailClient, 'mail')),
      appWith('offline', codeAuth(calendarClient, 'offline', nowhere)),
    ],
    database: await createTestDatabase(),
    queue: 'local',
    secretKey: randomBytes(32).toString('base64'),
    publicUrl: `http://127.0.0.1:${port}`,
    logger: pino({ level: 'silent' }),
  });
  const log = pino({ level: 'silent' }, { write: (line: string) => void logLines.push(line) });
  api = await createApiServer({ engine, processMetrics: false, logger: log });
  base = await api.listen({ port, host: '127.0.0.1' });
});

afterAll(async () => {
  await api?.close();
  await engine?.close();
  await provider.stop();
});

const http = apiClient({ base: () => base });

/** Starts a run of `app` and waits for its pause: the pending auth call, its authorization URL and state. */
async function pausedForAuth(app: string, userId: string) {
  const { body } = await http('POST', `/v1/apps/${app}/invocations`, { userId, input: 'go' });
  const id = body.invocationId as string;
  await engine.wait(id, { timeoutMs: 60_000 });
  const view = (await http('GET', `/v1/invocations/${id}`)).body;
  expect(view.status).toBe('paused');
  const [pending] = view.pending as { callId: string; kind: string; auth: { authorizationUrl: string } }[];
  expect(pending?.kind).toBe('auth');
  const authorizationUrl = pending?.auth.authorizationUrl as string;
  const state = new URL(authorizationUrl).searchParams.get('state') as string;
  return { id, callId: pending?.callId as string, authorizationUrl, state };
}

/** The user consents: the provider's redirect to the callback (returned, not followed). */
async function consent(authorizationUrl: string): Promise<string> {
  const response = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(response.status).toBe(302);
  return response.headers.get('location') as string;
}

async function credentialCount(): Promise<number> {
  const { rows } = (await engine.store.db.execute(
    sql.raw('select count(*)::int as n from credentials'),
  )) as unknown as { rows: { n: number }[] };
  return rows[0]?.n ?? 0;
}

/** The call still waits: the run paused on it, its request pending. */
async function expectStillWaiting(run: { id: string; callId: string }): Promise<void> {
  const view = await engine.get(run.id);
  expect(view.status).toBe('paused');
  expect(view.pending.map((p) => p.callId)).toEqual([run.callId]);
  const { body } = await http('GET', `/v1/invocations/${run.id}/requests`);
  expect((body.requests as Json[]).map((r) => r.status)).toEqual(['pending']);
}

describe('a malformed redirect to the callback', () => {
  it('is refused with a page saying what is wrong; the call keeps waiting and its link works after', async () => {
    const run = await pausedForAuth('calendar', 'ann');
    const state = `state=${encodeURIComponent(run.state)}`;
    const exchanges = provider.stats.exchanges;
    const credentials = await credentialCount();
    const cases: [query: string, says: RegExp][] = [
      [state, /the redirect has no authorization code/],
      [`${state}&code=`, /the redirect has no authorization code/],
      [`${state}&code=one&code=two`, /the redirect gives code more than once/],
      [`${state}&${state}&code=one`, /the redirect gives state more than once/],
      [`${state}&error=access_denied`, /the provider did not authorize \(access_denied\)/],
      [
        `${state}&error=access_denied&error_description=The+user+declined`,
        /the provider did not authorize \(access_denied: The user declined\)/,
      ],
      [`${state}&error=server_error&code=one`, /the provider did not authorize \(server_error\)/],
      // RFC 9207: an issuer other than the provider's (a mix-up attack) is refused before the code is sent.
      [`${state}&code=one&iss=${encodeURIComponent('https://elsewhere.example')}`, /redirect is not valid/],
    ];
    for (const [query, says] of cases) {
      const answer = await http('GET', `/v1/auth/callback?${query}`);
      expect({ query, status: answer.status, type: answer.type }).toEqual({
        query,
        status: 400,
        type: 'text/html; charset=utf-8',
      });
      expect(answer.text, query).toMatch(says);
      expect(answer.text, query).toContain('open its authorization URL again');
    }
    // Nothing was redeemed nor stored, and the call waits.
    expect(provider.stats.exchanges).toBe(exchanges);
    expect(await credentialCount()).toBe(credentials);
    await expectStillWaiting(run);

    // The same refusals for the redirect pasted as the call's answer (ADK's clients, `agentloom auth`).
    for (const [query, says] of cases) {
      const pasted = await http('POST', `/v1/invocations/${run.id}/responses`, {
        functionResponses: [
          {
            id: run.callId,
            name: REQUEST_CREDENTIAL,
            response: { authResponseUri: `${base}/v1/auth/callback?${query}` },
          },
        ],
      });
      expect({ query, status: pasted.status }).toEqual({ query, status: 400 });
      expect(pasted.body.error, query).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringMatching(says),
        details: { field: 'response.authResponseUri' },
      });
    }
    expect(provider.stats.exchanges).toBe(exchanges);
    await expectStillWaiting(run);

    // The user opens the link again: the consent completes the call.
    const done = await http('GET', await consent(run.authorizationUrl));
    expect(done.status).toBe(200);
    expect(done.text).toContain('Authorized');
    await engine.wait(run.id, { timeoutMs: 60_000 });
    expect((await engine.get(run.id)).status).toBe('completed');
  });

  it("with the state of another app's call and this app's code: refused by the provider, both calls wait", async () => {
    const calendar = await pausedForAuth('calendar', 'bo');
    const mail = await pausedForAuth('mail', 'bo');
    const code = new URL(await consent(calendar.authorizationUrl)).searchParams.get('code') as string;
    const crossed = await http(
      'GET',
      `/v1/auth/callback?state=${encodeURIComponent(mail.state)}&code=${encodeURIComponent(code)}`,
    );
    expect(crossed.status).toBe(400);
    expect(crossed.type).toBe('text/html; charset=utf-8');
    expect(crossed.text).toContain('the OAuth2 provider refused the authorization code (invalid_grant)');
    await expectStillWaiting(calendar);
    await expectStillWaiting(mail);
    for (const run of [mail, calendar]) {
      expect((await http('GET', await consent(run.authorizationUrl))).status).toBe(200);
      await engine.wait(run.id, { timeoutMs: 60_000 });
      expect((await engine.get(run.id)).status).toBe('completed');
    }
  });

  it('whose code cannot be redeemed because the token endpoint does not answer: 502, the call waits', async () => {
    const run = await pausedForAuth('offline', 'cy');
    const answer = await http('GET', await consent(run.authorizationUrl));
    expect(answer.status).toBe(502);
    expect(answer.type).toBe('text/html; charset=utf-8');
    expect(answer.text).toContain('token endpoint could not be reached to redeem the code');
    expect(answer.text).toContain('open its authorization URL again');
    // The cause is for the operator, in the log; the public page does not name hosts or errors.
    expect(answer.text).not.toContain('ECONNREFUSED');
    expect(logLines.some((l) => l.includes('could not be redeemed') && l.includes('ECONNREFUSED'))).toBe(
      true,
    );
    await expectStillWaiting(run);
    await http('POST', `/v1/invocations/${run.id}/cancel`);
  });
});
