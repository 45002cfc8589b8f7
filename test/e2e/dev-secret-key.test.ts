/**
 * The key that seals users' tool credentials, as real processes see it. `agentloom dev` serving apps whose tools
 * declare `auth`, without AGENTLOOM_SECRET_KEY, makes `<data>/secret.key` (mode 0600) and says where once; a
 * credential given through `agentloom auth` is used by the tool, and after a restart on the same data directory
 * (no new key, nothing said) it still opens: the next run needs no pause. `api` and `worker` make no key: they
 * refuse to start, saying to set AGENTLOOM_SECRET_KEY and how to make one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, runCli, ServerProcess, show } from '../support/processes/cli.js';
import { waitFor } from '../support/assert/wait-for.js';
import { secretDigest } from './fixtures/auth-apps.js';

/** Starting on a fresh PGlite directory takes seconds; on a busy machine many more. */
const START_TIMEOUT_MS = 180_000;
const APPS = join(import.meta.dirname, 'fixtures/auth-apps.ts');
const API_KEY = `planted-dev-key-${randomBytes(8).toString('hex')}`;
const MADE = 'made a secret key for stored tool credentials';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-dev-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const data = join(dir, 'data');

type Json = Record<string, unknown>;

async function startDev(): Promise<{ dev: ServerProcess; url: string }> {
  const port = await freePort();
  const dev = new ServerProcess(['dev', '--apps', APPS, '--data', data, '--port', String(port)]);
  const match = await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: START_TIMEOUT_MS - 10_000,
    what: 'dev to listen',
  });
  return { dev, url: match[1] as string };
}

/** Runs weather for alice until it pauses or ends; returns the invocation. */
async function runWeather(url: string): Promise<Json> {
  const created = await fetch(`${url}/v1/apps/weather/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId: 'alice', input: 'go' }),
  });
  const { invocationId } = (await created.json()) as { invocationId: string };
  return settled(url, invocationId);
}

async function settled(url: string, id: string): Promise<Json> {
  return waitFor(
    async () => {
      const view = (await (await fetch(`${url}/v1/invocations/${id}`)).json()) as Json;
      return ['paused', 'completed', 'failed'].includes(view.status as string) ? view : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: `${id} to settle` },
  );
}

describe('agentloom dev without AGENTLOOM_SECRET_KEY', () => {
  it(
    'makes <data>/secret.key once and keeps using it: a credential stored before a restart opens after it',
    async () => {
      const first = await startDev();
      const file = join(data, 'secret.key');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const key = readFileSync(file, 'utf8').trim();
      expect(Buffer.from(key, 'base64')).toHaveLength(32);
      const said = first.dev.stderr.split('\n').filter((line) => line.includes(MADE));
      expect(said, first.dev.output).toHaveLength(1);
      expect(said[0]).toContain(`"path":"${file}"`);
      expect(first.dev.output).not.toContain(key);

      const paused = await runWeather(first.url);
      expect(paused.status).toBe('paused');
      const callId = (paused.pending as Json[])[0]!.callId as string;
      const answered = await runCli([
        'auth',
        paused.id as string,
        callId,
        '--api-key',
        API_KEY,
        '--url',
        first.url,
      ]);
      expect(answered.code, show(answered)).toBe(0);
      const done = await settled(first.url, paused.id as string);
      expect(done.output).toContain(secretDigest(API_KEY));
      expect(await first.dev.stop()).toEqual({ code: 0, signal: null });

      const second = await startDev();
      try {
        expect(readFileSync(file, 'utf8').trim()).toBe(key);
        expect(second.dev.stderr).not.toContain(MADE);
        // alice's key was stored under the first process's key and opens under the second's: no pause.
        const again = await runWeather(second.url);
        expect(again.status, JSON.stringify(again)).toBe('completed');
        expect(again.output).toContain(secretDigest(API_KEY));
        expect(first.dev.output + second.dev.output).not.toContain(API_KEY);
      } finally {
        await second.dev.stop();
      }
    },
    2 * START_TIMEOUT_MS,
  );
});

describe('agentloom api and worker without AGENTLOOM_SECRET_KEY', () => {
  it('refuse to serve apps with auth tools, saying to set it and how to make one', async () => {
    // Nothing listens on port 1: they must refuse before they connect anywhere.
    const env = { DATABASE_URL: 'postgres://127.0.0.1:1/none' };
    for (const args of [
      ['worker', '--apps', APPS, '--queue', 'postgres'],
      ['api', '--apps', APPS, '--queue', 'postgres', '--port', '0'],
    ]) {
      const result = await runCli(args, { env });
      expect(result.code, show(result)).toBe(1);
      expect(result.stderr, show(result)).toContain('AGENTLOOM_SECRET_KEY');
      expect(result.stderr).toContain('openssl rand -base64 32');
      expect(result.stderr).toContain('get_weather');
    }
  });
});
