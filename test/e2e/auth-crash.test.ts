/**
 * The auth gate across crashes: a real engine + API process (test/fixtures/oauth2-api-process.ts) on
 * PostgreSQL, SIGKILLed at a fault point while it completes an OAuth2 consent, against the local provider of
 * test/fixtures/oauth2-server.ts (codes single use):
 *
 * - killed after the code was redeemed and before the token was stored: nothing is stored, the call still waits;
 *   the same callback again is refused (the provider will not redeem a code twice), a new consent completes it;
 * - killed after the token was stored (answer committed, run not yet woken): the next process resumes the run
 *   without asking again.
 *
 * Either way the tool runs once.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOAuthServer } from '../../examples/oauth2/fake-provider.js';
import { freePort, REPO, ServerProcess } from '../support/processes/cli.js';
import { createTestDatabase } from '../support/services/services.js';
import { apiClient, type Json } from '../support/client/http-client.js';
import { runReaches } from '../support/client/runs.js';
const provider = new FakeOAuthServer();
const client = provider.addClient('calendar-crash');
const dir = mkdtempSync(join(tmpdir(), 'agentloom-auth-crash-'));
const toolLog = join(dir, 'tool.jsonl');
const secretKey = randomBytes(32).toString('base64');
let databaseUrl: string;
let db: pg.Client;
let port: number;
let server: ServerProcess | undefined;

beforeAll(async () => {
  await provider.start();
  databaseUrl = await createTestDatabase();
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  port = await freePort();
});

afterAll(async () => {
  await server?.stop('SIGKILL');
  await db?.end();
  await provider.stop();
});

/** The API process started last (a restarted one listens on the same port); callbacks are called by whole URL. */
let serverUrl = '';
const http = apiClient({ base: () => serverUrl });

async function startServer(crashAt?: string): Promise<void> {
  server = new ServerProcess(
    [join(REPO, 'test/fixtures/oauth2-api-process.ts')],
    {
      DATABASE_URL: databaseUrl,
      AGENTLOOM_SECRET_KEY: secretKey,
      PROVIDER_URL: provider.url,
      CLIENT_ID: client.id,
      CLIENT_SECRET: client.secret,
      PORT: String(port),
      TOOL_LOG: toolLog,
      CRASH_AT: crashAt,
    },
    [process.execPath, '--import', 'tsx'],
  );
  const [, url] = await server.waitForOutput(/listening (\S+)/, { what: 'the API process to listen' });
  serverUrl = url as string;
}

async function pausedForAuth(id: string): Promise<Json> {
  const view = await runReaches(http, id, 'paused');
  const pending = view.pending as Json[];
  expect(pending).toMatchObject([{ kind: 'auth' }]);
  return pending[0]!;
}

async function completed(id: string): Promise<void> {
  await runReaches(http, id, 'completed');
}

async function start(userId: string): Promise<string> {
  const { body } = await http('POST', '/v1/apps/calendar/invocations', { userId, input: 'go' });
  return body.invocationId as string;
}

async function consent(authorizationUrl: string): Promise<string> {
  const response = await fetch(authorizationUrl, { redirect: 'manual' });
  return response.headers.get('location') as string;
}

function toolRuns(id: string): number {
  if (!existsSync(toolLog)) return 0;
  return readFileSync(toolLog, 'utf8')
    .split('\n')
    .filter((line) => line.includes(id)).length;
}

async function storedFor(userId: string): Promise<number> {
  const { rows } = await db.query('select count(*)::int as n from credentials where user_id = $1', [userId]);
  return (rows[0] as { n: number }).n;
}

describe('a crash while a consent completes', () => {
  it('between the code exchange and the store: nothing stored, the code is spent, a new consent completes the run', async () => {
    await startServer('after-code-exchange');
    const id = await start('alice');
    const pending = await pausedForAuth(id);
    const callback = await consent((pending.auth as Json).authorizationUrl as string);
    const exchanges = provider.stats.exchanges;
    await expect(fetch(callback)).rejects.toThrow();
    expect((await server!.exited).signal).toBe('SIGKILL');
    expect(provider.stats.exchanges - exchanges).toBe(1);
    expect(await storedFor('alice')).toBe(0);

    await startServer();
    const still = await pausedForAuth(id);
    expect(still.callId).toBe(pending.callId);
    // The same callback again: the provider refuses the spent code; still nothing stored, still waiting.
    const again = await http('GET', callback);
    expect(again.status).toBe(400);
    expect(again.text).toContain('invalid_grant');
    expect(await storedFor('alice')).toBe(0);
    // A new consent.
    const fresh = await http('GET', await consent((still.auth as Json).authorizationUrl as string));
    expect(fresh.status).toBe(200);
    await completed(id);
    expect(await storedFor('alice')).toBe(1);
    expect(toolRuns(id)).toBe(1);
    await server!.stop('SIGTERM');
  });

  it('after the token was stored: the next process resumes the run without asking again', async () => {
    await startServer('after-credential-stored');
    const id = await start('bob');
    const pending = await pausedForAuth(id);
    const callback = await consent((pending.auth as Json).authorizationUrl as string);
    await expect(fetch(callback)).rejects.toThrow();
    expect((await server!.exited).signal).toBe('SIGKILL');
    expect(await storedFor('bob')).toBe(1);
    expect(toolRuns(id)).toBe(0);

    await startServer();
    await completed(id);
    expect(toolRuns(id)).toBe(1);
    const { body } = await http('GET', `/v1/invocations/${id}/requests`);
    expect((body.requests as Json[]).map((r) => [r.kind, r.status])).toEqual([['auth', 'answered']]);
    await server!.stop('SIGTERM');
  });
});
