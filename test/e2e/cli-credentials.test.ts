/**
 * `agentloom auth`, `status` of an `auth` pause and `agentloom credentials list|delete` as real CLI processes
 * against an API with keys configured (engine and server in the test process, on PostgreSQL): `status` says what
 * is asked and the command that answers; `auth --api-key` / `--token` store the credential the tool then receives
 * (never printing it); bad usage exits 2 naming the flags; `credentials` lists keys without secrets, refuses an
 * app-scoped key, and deletes so that the next run asks again.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { createEngine, type Engine } from '../../src/index.js';
import { runCli, show, type CliResult } from '../support/processes/cli.js';
import { createTestDatabase } from '../support/services/services.js';
import { apps, secretDigest } from './fixtures/auth-apps.js';

const OPS = 'ops-key-0123456789';
const SCOPED = 'scoped-key-0123456789';
const ALICE_KEY = `planted-alice-key-${randomBytes(8).toString('hex')}`;
const ALICE_TOKEN = `planted-alice-token-${randomBytes(8).toString('hex')}`;
const BOB_KEY = `planted-bob-key-${randomBytes(8).toString('hex')}`;
const SECRETS = [ALICE_KEY, ALICE_TOKEN, BOB_KEY];

let engine: Engine;
let server: ApiApp;
let base: string;
const outputs: CliResult[] = [];
/** alice's first weather run, paused for her API key. */
let alicePause: { id: string; callId: string };

beforeAll(async () => {
  engine = await createEngine({
    apps,
    database: await createTestDatabase(),
    queue: 'local',
    secretKey: randomBytes(32).toString('base64'),
    logger: pino({ level: 'silent' }),
  });
  server = await createApiServer({
    engine,
    apiKeys: `ops:${OPS}; scoped:${SCOPED}:weather,mail`,
    processMetrics: false,
  });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server?.close();
  await engine?.close();
});

/** `agentloom ...args --url <server>` with AGENTLOOM_API_KEY set to the admin key (unless `key` says). */
async function cli(args: string[], key = OPS): Promise<CliResult> {
  const result = await runCli([...args, '--url', base], { env: { AGENTLOOM_API_KEY: key } });
  outputs.push(result);
  return result;
}

/** Starts `app` for `userId`; resolves with the invocation id and its pending auth call once it paused. */
async function pausedRun(app: string, userId: string): Promise<{ id: string; callId: string }> {
  const { invocationId } = await engine.enqueue({ app, userId, input: 'go' });
  const paused = await engine.wait(invocationId, { timeoutMs: 60_000 });
  expect(paused.status).toBe('paused');
  const [pending] = paused.pending;
  expect(pending?.kind).toBe('auth');
  return { id: invocationId, callId: pending!.callId };
}

describe('agentloom auth', () => {
  it('status shows what the pause asks for and the auth command that answers it', async () => {
    alicePause = await pausedRun('weather', 'alice');
    const { id, callId } = alicePause;
    const status = await cli(['status', id]);
    expect(status.code, show(status)).toBe(3);
    const lines = status.stdout.split('\n');
    const at = lines.indexOf(`pending auth ${callId}: get_weather({}) at forecaster`);
    expect(at, status.stdout).toBeGreaterThan(0);
    expect(lines.slice(at + 1, at + 3)).toEqual([
      '  asks:    an API key (header X-Api-Key), stored as "weather"',
      `  answer:  npx agentloom auth ${id} ${callId} --api-key KEY --url ${base}`,
    ]);
  });

  it('wants exactly one of its flags, fitting the scheme asked for: else exit 2, naming them', async () => {
    const { id, callId } = await pausedRun('weather', 'usage');
    const none = await cli(['auth', id, callId]);
    expect(none.code, show(none)).toBe(2);
    expect(none.stderr).toContain(
      'agentloom: USAGE: give exactly one of --token TOKEN, --api-key KEY or --callback-url CALLBACK_URL',
    );
    const two = await cli(['auth', id, callId, '--api-key', ALICE_KEY, '--token', ALICE_TOKEN]);
    expect(two.code, show(two)).toBe(2);
    expect(two.stderr).toContain('(got --token and --api-key)');
    const wrong = await cli(['auth', id, callId, '--token', ALICE_TOKEN]);
    expect(wrong.code, show(wrong)).toBe(2);
    expect(wrong.stderr).toContain(
      `call ${callId} asks for an API key (header X-Api-Key), not --token: answer it with --api-key KEY`,
    );
    expect((await engine.get(id)).status).toBe('paused');
  });

  it('--api-key and --token store the credential the tool then gets; the secret is never printed', async () => {
    const weather = { id: alicePause.id };
    const { callId } = alicePause;
    const answered = await cli(['auth', weather.id, callId, '--api-key', ALICE_KEY]);
    expect(answered.code, show(answered)).toBe(0);
    expect(answered.stdout).toMatch(
      new RegExp(
        `^answered ${callId} with an API key \\(stored encrypted as "weather"\\); ${weather.id} is `,
      ),
    );
    const done = await engine.wait(weather.id, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toContain(`"key":"${secretDigest(ALICE_KEY)}"`);

    // Answered already: no pending call of that id.
    const again = await cli(['auth', weather.id, callId, '--api-key', ALICE_KEY]);
    expect(again.code, show(again)).toBe(1);
    expect(again.stderr).toContain(`NOT_FOUND: ${weather.id} (completed) has no pending call ${callId}`);

    const mail = await pausedRun('mail', 'alice');
    const token = await cli(['auth', mail.id, mail.callId, '--token', ALICE_TOKEN]);
    expect(token.code, show(token)).toBe(0);
    expect(token.stdout).toContain('with a bearer token (stored encrypted as "mailbox")');
    expect((await engine.wait(mail.id, { timeoutMs: 60_000 })).output).toContain(secretDigest(ALICE_TOKEN));

    const bob = await pausedRun('weather', 'bob');
    expect((await cli(['auth', bob.id, bob.callId, '--api-key', BOB_KEY])).code).toBe(0);
    expect((await engine.wait(bob.id, { timeoutMs: 60_000 })).status).toBe('completed');
  });
});

describe('agentloom credentials', () => {
  it("lists a user's credentials without their secrets", async () => {
    const listed = await cli(['credentials', 'list', '--user', 'alice']);
    expect(listed.code, show(listed)).toBe(0);
    const rows = listed.stdout.trim().split('\n');
    expect(rows[0]).toBe('app      credential key  type    expires  updated');
    expect(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 4))).toEqual([
      ['mail', 'mailbox', 'http', 'never'],
      ['weather', 'weather', 'apiKey', 'never'],
    ]);
    const one = await cli(['credentials', 'list', '--user', 'alice', '--app', 'mail']);
    expect(one.stdout.trim().split('\n')).toHaveLength(2);
    const none = await cli(['credentials', 'list', '--user', 'nobody']);
    expect(none.stdout).toBe('no credentials stored for user nobody\n');
  });

  it('refuses a key that sees only some apps, and a call without --user', async () => {
    const scoped = await cli(['credentials', 'list', '--user', 'alice'], SCOPED);
    expect(scoped.code, show(scoped)).toBe(1);
    expect(scoped.stderr).toContain('agentloom: FORBIDDEN: the key "scoped" sees only some apps');
    const scopedDelete = await cli(['credentials', 'delete', '--user', 'alice'], SCOPED);
    expect(scopedDelete.code, show(scopedDelete)).toBe(1);
    const noUser = await cli(['credentials', 'list']);
    expect(noUser.code, show(noUser)).toBe(2);
    expect(noUser.stderr).toContain("required option '--user <id>' not specified");
  });

  it('deletes one app’s, then all of a user’s; the next run asks again', async () => {
    const one = await cli([
      'credentials',
      'delete',
      '--user',
      'alice',
      '--app',
      'weather',
      '--key',
      'weather',
    ]);
    expect(one.code, show(one)).toBe(0);
    expect(one.stdout).toBe('deleted 1 credential of user alice in weather under "weather"\n');
    await pausedRun('weather', 'alice');

    const all = await cli(['credentials', 'delete', '--user', 'alice']);
    expect(all.stdout).toBe('deleted 1 credential of user alice\n');
    const nothing = await cli(['credentials', 'delete', '--user', 'alice']);
    expect(nothing.code, show(nothing)).toBe(0);
    expect(nothing.stdout).toBe('no credentials of user alice: nothing deleted\n');
    await pausedRun('mail', 'alice');
    // bob's stays.
    const bob = await cli(['credentials', 'list', '--user', 'bob']);
    expect(bob.stdout).toContain('weather');
  });

  it('never printed a secret', () => {
    expect(outputs.length).toBeGreaterThan(10);
    for (const { stdout, stderr } of outputs) {
      for (const secret of SECRETS) expect(stdout + stderr).not.toContain(secret);
    }
  });
});
