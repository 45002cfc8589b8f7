/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by playwright-core), against
 * `agentloom dev` on PGlite from a clean data directory, and against `agentloom api` + one `agentloom worker` on
 * PostgreSQL and Redis — the same scenarios (test/support/scenarios/console-scenarios.ts), the same files served:
 *
 * - sign-in with API keys (a wrong key refused plainly); a key for one app sees only that app's runs and calls;
 * - a run started from the CLI appears in the runs list without a reload; its pause shows in the inbox with the
 *   tool and its arguments; the run page shows the tree (research branches, the loop and its iterations, the
 *   publisher) and the events; Approve there resumes it, and the open page shows the rest and "completed"; the
 *   audit trail says who approved;
 * - reject, a long-running call's JSON answer (bad JSON refused before sending), an answer someone gave first
 *   (409, with who), cancel and retry — each checked through the API after;
 * - a tool's credential: the key typed in a password field completes the run, and is found neither in
 *   the page's HTML nor in what the API returns of the run;
 * - no uncaught error and no console error in the browser throughout;
 * - the first load (page, script, stylesheet, compressed) under 300 KB.
 *
 * Without keys (`dev` as `npm start` runs it) there is no sign-in, and the name a person gives is recorded as the
 * answerer. The dev run also takes the README's screenshots (docs/console-*.png) when AGENTLOOM_SCREENSHOTS=1.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleBrowser, openPage, type PageTrouble } from '../support/processes/browser.js';
import { freePort, REPO, ServerProcess } from '../support/processes/cli.js';
import {
  answersFromConsole,
  approveFromConsole,
  cancelRetryFromConsole,
  credentialFromConsole,
  elicitationFromConsole,
  firstLoadBytes,
  keyScopeInConsole,
  type ConsoleTarget,
} from '../support/scenarios/console-scenarios.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

const APPS = join(REPO, 'test/e2e/fixtures/console-apps.ts');
/**
 * The key credentials are encrypted under: `vault`'s tool declares `auth`, and a process serving it refuses to
 * start without one. The api and the worker share it (one encrypts, the other opens).
 */
const SECRET_KEY = randomBytes(32).toString('base64');
const OPS_KEY = 'console-ops-key-0123456789';
const WRITERS_KEY = 'console-writers-key-0123456789';
const KEYS = `ops:${OPS_KEY} writers:${WRITERS_KEY}:writer`;
const START_TIMEOUT_MS = 180_000;
/** Long leases: nothing is killed here, and a busy machine must not make a step look abandoned. */
const LEASE_MS = '30000';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-console-'));
const chromium = consoleBrowser();

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function startDev(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ dev: ServerProcess; url: string }> {
  const port = await freePort();
  const dev = new ServerProcess(['dev', '--port', String(port), ...args], {
    AGENTLOOM_SECRET_KEY: SECRET_KEY,
    ...env,
  });
  await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: START_TIMEOUT_MS - 10_000,
    what: 'dev to listen',
  });
  return { dev, url: `http://127.0.0.1:${port}` };
}

/** Runs every console scenario against `target`; each must leave the browser without errors. */
function consoleScenarios(target: ConsoleTarget): void {
  const clean = (trouble: PageTrouble) => expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });

  it('signs in, shows a CLI run live, its pause in the inbox, its tree and events; Approve completes it', async () => {
    clean(await approveFromConsole(chromium.browser, target));
  });

  it('rejects, answers a long-running call with checked JSON, and says who answered first', async () => {
    clean(await answersFromConsole(chromium.browser, target));
  });

  it("answers a running tool's question (elicitation) with the fields it asks for", async () => {
    clean(await elicitationFromConsole(chromium.browser, target));
  });

  it("asks for a tool's credential, sends it from a password field, and never shows it", async () => {
    clean(await credentialFromConsole(chromium.browser, target));
  });

  it('cancels and retries a run', async () => {
    clean(await cancelRetryFromConsole(chromium.browser, target));
  });

  it("shows a key only its apps' runs and calls", async () => {
    clean(await keyScopeInConsole(chromium.browser, target));
  });

  it('loads in under 300 KB, compressed', async () => {
    const bytes = await firstLoadBytes(chromium.browser, target);
    console.log(`console: first load ${(bytes / 1024).toFixed(1)} KB compressed (page, script, stylesheet)`);
    expect(bytes).toBeLessThan(300 * 1024);
  });
}

describe('the console on agentloom dev (PGlite, clean data dir)', () => {
  const target = { opsKey: OPS_KEY, writersKey: WRITERS_KEY } as ConsoleTarget;
  beforeAll(async () => {
    const traceUrl = 'http://jaeger.example:16686/trace/{traceId}';
    const { url } = await startDev(['--apps', APPS, '--data', join(dir, 'keyed')], {
      AGENTLOOM_API_KEYS: KEYS,
      AGENTLOOM_TRACE_URL: traceUrl,
    });
    Object.assign(target, { url, traceUrl, screenshots: process.env.AGENTLOOM_SCREENSHOTS === '1' });
  }, START_TIMEOUT_MS);

  consoleScenarios(target);

  it(
    'without keys: no sign-in, and the name a person gives is recorded as the answerer',
    async () => {
      const { url } = await startDev(['--apps', APPS, '--data', join(dir, 'open')]);
      const created = await fetch(`${url}/v1/apps/mail/invocations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: 'console-e2e', input: 'mail bob' }),
      });
      const { invocationId: id } = (await created.json()) as { invocationId: string };
      const { page, trouble } = await openPage(chromium.browser);
      await page.goto(`${url}/#/inbox`);
      await page.getByLabel('Your name').fill('Ada Lovelace');
      await page.getByLabel('Your name').press('Tab');
      const call = page.getByRole('article', { name: 'send_mail (confirmation)' });
      await call.getByRole('button', { name: 'Approve' }).click();
      const requests = await waitFor(
        async () => {
          const body = (await (await fetch(`${url}/v1/invocations/${id}/requests`)).json()) as {
            requests: { status: string; answeredBy: string | null }[];
          };
          return body.requests[0]?.status === 'answered' ? body.requests : undefined;
        },
        { timeoutMs: 30_000, what: 'the answer' },
      );
      expect(requests).toMatchObject([{ answeredBy: 'Ada Lovelace' }]);
      expect(await page.getByLabel('API key').count()).toBe(0);
      await page.context().close();
      expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });
    },
    START_TIMEOUT_MS,
  );
});

describe('the console on agentloom api + one worker (PostgreSQL, Redis)', () => {
  const target = { opsKey: OPS_KEY, writersKey: WRITERS_KEY } as ConsoleTarget;
  let worker: ServerProcess;
  beforeAll(async () => {
    const services = {
      DATABASE_URL: await createTestDatabase(),
      REDIS_URL: testRedisUrl(),
      AGENTLOOM_QUEUE_PREFIX: testQueuePrefix(),
      LOG_LEVEL: 'info',
      AGENTLOOM_SECRET_KEY: SECRET_KEY,
    };
    const port = await freePort();
    const api = new ServerProcess(['api', '--port', String(port), '--apps', APPS], {
      ...services,
      AGENTLOOM_API_KEYS: KEYS,
    });
    worker = new ServerProcess(
      ['worker', '--apps', APPS, '--queue', 'redis', '--lease-ms', LEASE_MS],
      services,
    );
    await Promise.all([
      api.waitForOutput(/"msg":"api listening"/, { timeoutMs: START_TIMEOUT_MS - 10_000, what: 'the api' }),
      worker.waitForOutput(/"msg":"worker started"/, {
        timeoutMs: START_TIMEOUT_MS - 10_000,
        what: 'the worker',
      }),
    ]);
    target.url = `http://127.0.0.1:${port}`;
  }, START_TIMEOUT_MS);

  afterAll(async () => {
    await worker?.stop('SIGTERM');
  });

  consoleScenarios(target);
});
