/**
 * A 24 MiB body refused before it is read — 413 (over the limit), 401 (wrong key), 415 (not JSON) — sent by Node's
 * http client to a real `agentloom dev` and a real `agentloom api` process: twenty times each, with the
 * connection kept alive and with `Connection: close` (`agent: false`, as Node 18's global agent and
 * `new http.Agent()` send it). Every try reads the answer and its request never emits `error`, before or after the
 * answer: the server reads and drops the rest of the body and only then closes a connection it answered last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postWithHttp, type BigPostResult, type ConnectionMode } from '../support/client/big-body.js';
import { freePort, REPO, ServerProcess } from '../support/processes/cli.js';
import { createTestDatabase } from '../support/services/services.js';

const KEY = 'e2e-refused-body-key-0123456789';
const APPS = join(REPO, 'test/e2e/fixtures/service-apps.ts');
const START_TIMEOUT_MS = 180_000;
const TRIES = 20;
const big = Buffer.from(JSON.stringify({ userId: 'e2e', input: 'x'.repeat(24 * 1024 * 1024) }));

const dir = mkdtempSync(join(tmpdir(), 'agentloom-refused-body-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each way a body is refused unread: the headers that get it refused, and the answer. */
const REFUSALS = [
  {
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    headers: { authorization: `Bearer ${KEY}` },
  },
  { status: 401, code: 'UNAUTHORIZED', headers: { authorization: 'Bearer not-a-key-of-this-server' } },
  {
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/xml' },
  },
] as const;

const PROCESSES = [
  {
    name: 'dev',
    start: async (port: number) =>
      new ServerProcess(['dev', '--port', String(port), '--apps', APPS, '--data', join(dir, 'dev')], {
        AGENTLOOM_API_KEYS: `ops:${KEY}`,
      }),
    listening: /^agentloom dev: listening on /m,
  },
  {
    name: 'api',
    start: async (port: number) =>
      new ServerProcess(['api', '--port', String(port), '--apps', APPS, '--queue', 'postgres'], {
        DATABASE_URL: await createTestDatabase(),
        AGENTLOOM_API_KEYS: `ops:${KEY}`,
        LOG_LEVEL: 'info',
      }),
    listening: /"msg":"api listening"/,
  },
] as const;

describe.each(PROCESSES)('agentloom $name: a refused 24 MiB body sent by node:http', (proc) => {
  let server: ServerProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    server = await proc.start(port);
    await server.waitForOutput(proc.listening, {
      timeoutMs: START_TIMEOUT_MS - 10_000,
      what: `${proc.name} to listen`,
    });
    url = `http://127.0.0.1:${port}/v1/apps/mail/invocations`;
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop('SIGTERM');
  });

  const cases = REFUSALS.flatMap((refusal) =>
    (['keep-alive', 'close'] as ConnectionMode[]).map((connection) => ({ ...refusal, connection })),
  );
  it.each(cases)(
    '$status with connection $connection: read 20 times in a row, no error on the request',
    async ({ status, code, headers, connection }) => {
      const results: BigPostResult[] = [];
      for (let i = 0; i < TRIES; i++) results.push(await postWithHttp(url, big, headers, connection));
      // All tries listed at once when some broke: which, with what error, and whether the answer came first.
      const broken = results.flatMap((r, i) => (r.status !== status || r.error ? [{ try: i, ...r }] : []));
      expect(broken, server.output.slice(-4000)).toEqual([]);
      for (const result of results) expect(result).toMatchObject({ status, body: { error: { code } } });
    },
  );

  it('still answers others after', async () => {
    expect((await fetch(url.replace(/\/v1\/.*$/, '/healthz'))).status).toBe(200);
  });
});
