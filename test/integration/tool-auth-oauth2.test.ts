/**
 * The auth gate's OAuth2 side, through the HTTP API on PostgreSQL, against a local OAuth2 provider
 * (test/fixtures/oauth2-server.ts: PKCE S256 checked, codes single use): a call pauses with an authorization URL
 * (state + PKCE challenge, no client secret); the provider's redirect to `/v1/auth/callback` — or the same URL
 * pasted as `authResponseUri` — completes it; a forged, unknown or reused state is refused with nothing stored; a
 * code the provider already redeemed is refused; the user's token is reused, refreshed once when two calls find
 * it expired together, and a token the service refuses costs one new consent (no loop); the client-credentials
 * flow never pauses. Then a scan for every secret of the flow (client secrets, codes, access and refresh tokens).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { REQUEST_CREDENTIAL } from '../../src/agents/llm/journal.js';
import {
  AuthError,
  createEngine,
  FunctionTool,
  LlmAgent,
  McpToolset,
  ParallelAgent,
  ScriptedModel,
  type Engine,
  type ScriptedTurn,
} from '../../src/index.js';
import { FakeOAuthServer } from '../../examples/oauth2/fake-provider.js';
import { call, scripted } from '../support/agents.js';
import { REPO } from '../support/cli.js';
import { expectNoSecrets, scannedRows } from '../support/secret-scan.js';
import { createTestDatabase } from '../support/services.js';
import { waitFor } from '../support/wait-for.js';

type Json = Record<string, unknown>;
const provider = new FakeOAuthServer();
const calendarClient = provider.addClient('calendar-app');
const serviceClient = provider.addClient('metrics-service');
const mcpLog = join(mkdtempSync(join(tmpdir(), 'agentloom-oauth2-mcp-')), 'calls.jsonl');
let mcpServer: ChildProcess | undefined;
let engine: Engine;
let api: ApiApp;
let base: string;
const logLines: string[] = [];
const answers: string[] = [];
/** Each tool run: the tool, the run and a digest of the token it got (never the token). */
const seen: { tool: string; run: string; token: string; status: number }[] = [];

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 12);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function lastResponse(turn: ScriptedTurn): unknown {
  const parts = turn.contents.flatMap((c) => c.parts);
  return parts.reverse().find((p) => p.functionResponse)?.functionResponse?.response;
}

function callsOnce(name: string, tool: FunctionTool) {
  const reply = (turn: ScriptedTurn) =>
    turn.callIndex === 0 ? call(tool.name) : `done: ${JSON.stringify(lastResponse(turn))}`;
  return scripted(name, reply, { tools: [tool] });
}

/** A tool that calls the provider's protected resource with the user's token; a 401 is an AuthError. */
function resourceTool(name: string, auth: ConstructorParameters<typeof FunctionTool>[0]['auth']) {
  return new FunctionTool({
    name,
    description: 'reads the protected resource',
    auth,
    execute: async (_args, ctx) => {
      const credential = ctx.credential;
      if (credential?.authType !== 'oauth2') throw new Error('no OAuth2 credential');
      const token = credential.oauth2.accessToken;
      const response = await fetch(`${provider.url}/resource`, {
        headers: { authorization: `Bearer ${token}` },
      });
      seen.push({ tool: name, run: ctx.invocationId, token: digest(token), status: response.status });
      if (response.status === 401) throw new AuthError(`${name}: the provider refused the token`);
      return { ok: true };
    },
  });
}

beforeAll(async () => {
  const providerUrl = await provider.start();
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const calendarAuth = {
    authScheme: {
      type: 'oauth2' as const,
      flows: {
        authorizationCode: {
          authorizationUrl: `${providerUrl}/authorize`,
          tokenUrl: `${providerUrl}/token`,
          scopes: { 'calendar.read': 'read your calendar' },
        },
      },
    },
    rawAuthCredential: {
      authType: 'oauth2' as const,
      oauth2: { clientId: calendarClient.id, clientSecret: calendarClient.secret },
    },
    credentialKey: 'calendar',
  };
  const calendar = resourceTool('list_events', calendarAuth);
  const metrics = resourceTool('fetch_metrics', {
    authScheme: {
      type: 'oauth2',
      flows: { clientCredentials: { tokenUrl: `${providerUrl}/token`, scopes: {} } },
    },
    rawAuthCredential: {
      authType: 'oauth2',
      oauth2: { clientId: serviceClient.id, clientSecret: serviceClient.secret },
    },
  });
  // An MCP server whose tool calls need a token the provider accepts (401 otherwise).
  mcpServer = spawn(
    process.execPath,
    ['--import', 'tsx', join(REPO, 'test/fixtures/mcp-server.ts'), '--http', '0'],
    {
      cwd: REPO,
      env: { ...process.env, MCP_CALL_LOG: mcpLog, MCP_AUTH_URL: providerUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  mcpServer.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const mcpPort = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
    timeoutMs: 60_000,
    what: 'the MCP test server to listen',
  });
  const notes = new McpToolset({
    connection: { url: `http://127.0.0.1:${mcpPort}/mcp` },
    toolFilter: ['echo'],
    auth: { ...calendarAuth, credentialKey: 'notes' },
  });
  const noteTaker = new LlmAgent({
    name: 'note_taker',
    model: new ScriptedModel({
      respond: (turn) =>
        turn.callIndex === 0
          ? { functionCalls: [{ name: 'echo', args: { text: 'hello notes' } }] }
          : `done: ${JSON.stringify(lastResponse(turn))}`,
    }),
    tools: [notes],
  });
  const stream = { write: (line: string) => void logLines.push(line) };
  engine = await createEngine({
    apps: [
      { name: 'calendar', agent: callsOnce('planner', calendar) },
      {
        name: 'digest',
        agent: new ParallelAgent({
          name: 'both',
          subAgents: [callsOnce('left', calendar), callsOnce('right', calendar)],
        }),
      },
      { name: 'metrics', agent: callsOnce('watcher', metrics) },
      { name: 'notes', agent: noteTaker },
    ],
    database: await createTestDatabase(),
    queue: 'local',
    secretKey: randomBytes(32).toString('base64'),
    publicUrl,
    logger: pino({ level: 'trace' }, stream),
  });
  api = await createApiServer({ engine, processMetrics: false, logger: pino({ level: 'trace' }, stream) });
  base = await api.listen({ port, host: '127.0.0.1' });
});

afterAll(async () => {
  await api?.close();
  await engine?.close();
  mcpServer?.kill('SIGKILL');
  await provider.stop();
});

async function http(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(path.startsWith('http') ? path : `${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  answers.push(text);
  const json = response.headers.get('content-type')?.includes('application/json');
  return { status: response.status, body: json && text ? (JSON.parse(text) as Json) : { text } };
}

async function start(app: string, userId: string): Promise<string> {
  const { body } = await http('POST', `/v1/apps/${app}/invocations`, { userId, input: 'go' });
  return body.invocationId as string;
}

async function settled(id: string): Promise<Json> {
  await engine.wait(id, { timeoutMs: 60_000 });
  return (await http('GET', `/v1/invocations/${id}`)).body;
}

async function pausedForAuth(id: string): Promise<Json> {
  const view = await settled(id);
  expect(view.status).toBe('paused');
  const pending = view.pending as Json[];
  expect(pending).toHaveLength(1);
  expect(pending[0]).toMatchObject({ kind: 'auth' });
  return pending[0]!;
}

/** The user consents: the provider redirects to the callback URL (returned, not followed). */
async function consent(authorizationUrl: string): Promise<string> {
  const response = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(response.status).toBe(302);
  return response.headers.get('location') as string;
}

async function credentialRows(): Promise<{ user_id: string; secret: string }[]> {
  const { rows } = (await engine.store.db.execute(
    sql.raw(`select user_id, encode(secret, 'hex') as secret from credentials order by user_id`),
  )) as unknown as { rows: { user_id: string; secret: string }[] };
  return rows;
}

describe('OAuth2 authorization code with PKCE', () => {
  it('pauses with an authorization URL (state and S256 challenge, no secret); the callback completes it', async () => {
    const id = await start('calendar', 'alice');
    const pending = await pausedForAuth(id);
    const url = new URL((pending.auth as Json).authorizationUrl as string);
    expect(url.origin + url.pathname).toBe(`${provider.url}/authorize`);
    expect(url.searchParams.get('client_id')).toBe(calendarClient.id);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toBe(`${base}/v1/auth/callback`);
    expect(url.searchParams.get('scope')).toBe('calendar.read');
    // ADK's request event: {functionCallId, authConfig} with the authorization URL and state, no secret.
    const events = (await http('GET', `/v1/invocations/${id}/events`)).body.events as Json[];
    const request = events
      .flatMap((e) => ((e.content as { parts?: Json[] } | undefined)?.parts ?? []) as Json[])
      .find((p) => (p.functionCall as Json | undefined)?.name === REQUEST_CREDENTIAL)?.functionCall as Json;
    expect(request).toMatchObject({
      id: pending.callId,
      args: {
        functionCallId: pending.originalCallId,
        authConfig: {
          credentialKey: 'calendar',
          rawAuthCredential: { authType: 'oauth2', oauth2: { clientId: calendarClient.id } },
          exchangedAuthCredential: {
            authType: 'oauth2',
            oauth2: { authUri: url.toString(), state: url.searchParams.get('state') },
          },
        },
      },
    });
    expect(JSON.stringify(request)).not.toContain(calendarClient.secret);

    const callback = await consent(url.toString());
    const done = await http('GET', callback);
    expect(done.status).toBe(200);
    expect(done.body.text).toContain('Authorized');
    expect((await settled(id)).status).toBe('completed');
    expect(seen.filter((s) => s.run === id)).toEqual([
      { tool: 'list_events', run: id, token: expect.any(String), status: 200 },
    ]);

    // The same callback again (a reused state): 400, and nothing stored anew.
    const before = await credentialRows();
    const again = await http('GET', callback);
    expect(again.status).toBe(400);
    expect(again.body.text).toContain('already used');
    expect(await credentialRows()).toEqual(before);
  });

  it('refuses a forged or unknown state with 400 and stores nothing', async () => {
    const id = await start('calendar', 'mallory');
    const pending = await pausedForAuth(id);
    const state = new URL((pending.auth as Json).authorizationUrl as string).searchParams.get(
      'state',
    ) as string;
    const before = await credentialRows();
    const forged = state.slice(0, -4) + (state.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const bad of [forged, 'inv.call.mac', '']) {
      const answer = await http(
        'GET',
        `/v1/auth/callback?state=${encodeURIComponent(bad)}&code=planted-code-x`,
      );
      expect(answer.status).toBe(400);
    }
    // A state of another call pasted as this call's answer.
    const other = await start('calendar', 'mallory');
    const otherPending = await pausedForAuth(other);
    const stolen = await consent((otherPending.auth as Json).authorizationUrl as string);
    const misfiled = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [{ id: pending.callId, response: { authResponseUri: stolen } }],
    });
    expect(misfiled.status).toBe(400);
    expect(misfiled.body.error).toMatchObject({ details: { field: 'response.authResponseUri' } });
    expect(await credentialRows()).toEqual(before);
    expect((await settled(id)).status).toBe('paused');
    await http('POST', `/v1/invocations/${id}/cancel`);
    await http('POST', `/v1/invocations/${other}/cancel`);
  });

  it('takes the callback URL as a function response (authResponseUri); a code redeemed before is refused', async () => {
    const id = await start('calendar', 'bob');
    const pending = await pausedForAuth(id);
    const authorizationUrl = (pending.auth as Json).authorizationUrl as string;
    // Someone redeemed this code first (it leaked): the provider refuses it, the call stays paused.
    const leaked = await consent(authorizationUrl);
    const code = new URL(leaked).searchParams.get('code') as string;
    const thief = await fetch(`${provider.url}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: 'calendar-app' }),
    });
    expect(thief.status).toBe(400);
    const refused = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: pending.callId, name: REQUEST_CREDENTIAL, response: { authResponseUri: leaked } },
      ],
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('invalid_grant');
    expect((await settled(id)).status).toBe('paused');

    // A fresh consent, pasted as the answer.
    const callback = await consent(authorizationUrl);
    const ok = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: pending.callId, name: REQUEST_CREDENTIAL, response: { authResponseUri: callback } },
      ],
    });
    expect(ok.status).toBe(200);
    expect((await settled(id)).status).toBe('completed');
    expect(seen.filter((s) => s.run === id).map((s) => s.status)).toEqual([200]);
    const trail = (await http('GET', `/v1/invocations/${id}/requests`)).body.requests as Json[];
    expect(trail).toMatchObject([
      {
        kind: 'auth',
        status: 'answered',
        response: { credentialKey: 'calendar', authType: 'oauth2', stored: true },
      },
    ]);
  });

  it("reuses a user's token, and never another user's", async () => {
    const alice = await start('calendar', 'alice');
    expect((await settled(alice)).status).toBe('completed');
    const bob = await start('calendar', 'bob');
    expect((await settled(bob)).status).toBe('completed');
    const tokens = seen.filter((s) => s.run === alice || s.run === bob).map((s) => s.token);
    expect(new Set(tokens).size).toBe(2);
    const carol = await start('calendar', 'carol');
    await pausedForAuth(carol);
    await http('POST', `/v1/invocations/${carol}/cancel`);
  });

  it('one consent resumes both parallel calls; the expired token is refreshed once for the two', async () => {
    // Dave's first token expires within the leeway; refreshed ones last an hour. A refresh takes a while.
    provider.expiresIn = { authorization_code: 30 };
    provider.refreshDelayMs = 300;
    const refreshes = provider.stats.refreshes;
    const both = await start('digest', 'dave');
    const view = await settled(both);
    expect(view.status).toBe('paused');
    const pending = view.pending as Json[];
    expect(pending.map((p) => p.kind)).toEqual(['auth', 'auth']);
    const callback = await consent((pending[0]!.auth as Json).authorizationUrl as string);
    expect((await http('GET', callback)).status).toBe(200);
    expect((await settled(both)).status).toBe('completed');
    expect(provider.stats.refreshes - refreshes).toBe(1);
    const runs = seen.filter((s) => s.run === both);
    expect(runs.map((s) => s.status)).toEqual([200, 200]);
    expect(runs[0]!.token).toBe(runs[1]!.token);
    const trail = (await http('GET', `/v1/invocations/${both}/requests`)).body.requests as Json[];
    expect(trail.map((r) => r.status)).toEqual(['answered', 'answered']);
    provider.expiresIn = {};
    provider.refreshDelayMs = 0;
  });

  it("one consent resumes the user's other runs waiting for the same credential, not another user's", async () => {
    const first = await start('calendar', 'hank');
    const second = await start('calendar', 'hank');
    const other = await start('calendar', 'ivy');
    const pending = await pausedForAuth(first);
    await pausedForAuth(second);
    await pausedForAuth(other);
    expect((await http('GET', await consent((pending.auth as Json).authorizationUrl as string))).status).toBe(
      200,
    );
    expect((await settled(first)).status).toBe('completed');
    expect((await settled(second)).status).toBe('completed');
    const trail = (await http('GET', `/v1/invocations/${second}/requests`)).body.requests as Json[];
    expect(trail).toMatchObject([{ kind: 'auth', status: 'answered', response: { stored: true } }]);
    expect(seen.filter((s) => s.run === first || s.run === second).map((s) => s.status)).toEqual([200, 200]);
    expect((await settled(other)).status).toBe('paused');
    await http('POST', `/v1/invocations/${other}/cancel`);
  });

  it('an expired token whose refresh the provider refuses is deleted, and the user asked again', async () => {
    // Every token gina gets expires within the leeway: each use refreshes it.
    provider.expiresIn = { authorization_code: 30, refresh_token: 30 };
    onTestFinished(() => {
      provider.expiresIn = {};
    });
    const first = await start('calendar', 'gina');
    const pending = await pausedForAuth(first);
    // Answered as ADK's clients answer: the auth config back, the callback URL inside exchangedAuthCredential.
    const callback = await consent((pending.auth as Json).authorizationUrl as string);
    const config: Json = { ...(pending.auth as Json), authorizationUrl: undefined };
    const exchanged = (config.exchangedAuthCredential as { oauth2: Json }).oauth2;
    const adkAnswer = {
      ...config,
      exchangedAuthCredential: { authType: 'oauth2', oauth2: { ...exchanged, authResponseUri: callback } },
    };
    expect(
      (
        await http('POST', `/v1/invocations/${first}/responses`, {
          functionResponses: [{ id: pending.callId, name: REQUEST_CREDENTIAL, response: adkAnswer }],
        })
      ).status,
    ).toBe(200);
    expect((await settled(first)).status).toBe('completed');
    expect(await credentialRows()).toContainEqual(expect.objectContaining({ user_id: 'gina' }));

    provider.revokeRefreshTokens();
    const refused = provider.stats.refused;
    const second = await start('calendar', 'gina');
    await pausedForAuth(second);
    expect(provider.stats.refused - refused).toBe(1);
    expect(await credentialRows()).not.toContainEqual(expect.objectContaining({ user_id: 'gina' }));
    expect(seen.filter((s) => s.run === second)).toEqual([]);
    await http('POST', `/v1/invocations/${second}/cancel`);
  });

  it('a refused token is deleted and the user asked once more; a second refusal goes to the model', async () => {
    onTestFinished(() => {
      provider.refuseAll = false;
    });
    provider.revokeAll();
    const id = await start('calendar', 'alice');
    const pending = await pausedForAuth(id);
    expect(await credentialRows()).not.toContainEqual(expect.objectContaining({ user_id: 'alice' }));
    // The service refuses every token from now on: one more consent, then the error reaches the model.
    provider.refuseAll = true;
    await http('GET', await consent((pending.auth as Json).authorizationUrl as string));
    const done = await settled(id);
    expect(done.status).toBe('completed');
    expect(String(done.output)).toContain('the provider refused the token');
    expect(seen.filter((s) => s.run === id).map((s) => s.status)).toEqual([401, 401]);
    const trail = (await http('GET', `/v1/invocations/${id}/requests`)).body.requests as Json[];
    // One consent asked (after the first refusal); the second refusal did not ask again.
    expect(trail.filter((r) => r.kind === 'auth')).toHaveLength(1);
  });
});

describe('an MCP toolset with auth', () => {
  function echoCalls(): { tool: string; refused?: boolean }[] {
    if (!existsSync(mcpLog)) return [];
    return readFileSync(mcpLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { tool: string; refused?: boolean });
  }

  it("sends the user's token as the call's Authorization; a 401 costs one new consent, then the call runs", async () => {
    const first = await start('notes', 'frank');
    const pending = await pausedForAuth(first);
    expect(pending).toMatchObject({ name: 'echo', auth: { credentialKey: 'notes' } });
    await http('GET', await consent((pending.auth as Json).authorizationUrl as string));
    const done = await settled(first);
    expect(done.status).toBe('completed');
    expect(String(done.output)).toContain('hello notes');
    expect(echoCalls()).toEqual([expect.objectContaining({ tool: 'echo', end: 'done' })]);

    // The provider revokes the token: the server answers 401, the call asks once more, then runs (an unsafe MCP
    // tool: the refused call had no effect, so it is not in doubt).
    provider.revokeAll();
    const second = await start('notes', 'frank');
    const again = await pausedForAuth(second);
    await http('GET', await consent((again.auth as Json).authorizationUrl as string));
    const after = await settled(second);
    expect(after.status).toBe('completed');
    expect(String(after.output)).toContain('hello notes');
    expect(echoCalls().map((c) => [c.tool, c.refused ?? false])).toEqual([
      ['echo', false],
      ['echo', true],
      ['echo', false],
    ]);
  });
});

describe('OAuth2 client credentials', () => {
  it('never pauses: the token is fetched once and reused', async () => {
    const before = provider.stats.clientCredentials;
    const first = await start('metrics', 'erin');
    expect((await settled(first)).status).toBe('completed');
    const second = await start('metrics', 'erin');
    expect((await settled(second)).status).toBe('completed');
    expect(provider.stats.clientCredentials - before).toBe(1);
    expect(seen.filter((s) => s.run === first || s.run === second).map((s) => s.status)).toEqual([200, 200]);
  });
});

describe('secrets', () => {
  it('leaves no client secret, code or token in any row, API answer, /metrics or log line', async () => {
    await http('GET', '/metrics');
    const secrets = [calendarClient.secret, serviceClient.secret, ...provider.issued];
    expect(provider.issued.filter((s) => s.includes('refresh')).length).toBeGreaterThan(1);
    expect(provider.issued.filter((s) => s.includes('code')).length).toBeGreaterThan(3);
    const rows = await scannedRows(engine);
    expect(rows.filter((r) => r.t === 'credentials').length).toBeGreaterThan(2);
    expectNoSecrets(secrets, { rows, answers, logLines });
    expect(logLines.length).toBeGreaterThan(10);
  });
});
