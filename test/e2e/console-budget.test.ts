/**
 * A budget pause answered in the web console, in a real headless Chromium on `agentloom dev`: the inbox
 * shows what the run spent of which limit; a bad raise is refused before anything is sent; Raise budget resumes
 * the run where it paused (it pauses again at the raised limit), Stop run cancels it.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleBrowser, openPage } from '../support/processes/browser.js';
import { freePort, REPO } from '../support/processes/cli.js';
import { DEV_START_MS, DevProcesses } from '../support/processes/a2a-dev.js';
import { waitFor } from '../support/assert/wait-for.js';

const chromium = consoleBrowser();
const devs = new DevProcesses();

afterAll(async () => {
  await devs.stopAll();
});

interface Run {
  status: string;
  spent: { tokens: number };
  budget: Record<string, unknown> | null;
  pending: { callId: string; kind: string; args: Record<string, unknown> }[];
}

describe('a budget pause in the console', () => {
  it(
    'shows the spend and the limit; Raise budget resumes the run, Stop run cancels it',
    async () => {
      const { url } = await devs.start(await freePort(), {
        apps: join(REPO, 'test/e2e/fixtures/console-budget-apps.ts'),
      });
      const run = async (id: string): Promise<Run> =>
        (await (await fetch(`${url}/v1/invocations/${id}`)).json()) as Run;
      const pausedAt = (id: string, tokens: number) =>
        waitFor(
          async () => {
            const r = await run(id);
            return r.status === 'paused' && r.spent.tokens === tokens ? r : undefined;
          },
          { timeoutMs: 60_000, what: `the run to pause on its budget at ${tokens} tokens` },
        );
      const created = await fetch(`${url}/v1/apps/spender/invocations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: 'console-e2e', input: 'spend' }),
      });
      const { invocationId: id } = (await created.json()) as { invocationId: string };
      await pausedAt(id, 900);

      const { page, trouble } = await openPage(chromium.browser);
      await page.goto(`${url}/#/inbox`);
      await page.getByLabel('Your name').fill('Ada Lovelace');
      await page.getByLabel('Your name').press('Tab');
      const card = page.getByRole('article', { name: 'budget (budget)' });
      await card.waitFor({ timeout: 15_000 });
      expect(await card.getByLabel('Budget spent').textContent()).toContain('spent 900 of 1000 tokens');
      // A bad limit is refused before anything is sent.
      await card.getByLabel('New tokens limit').fill('lots');
      await card.getByRole('button', { name: 'Raise budget' }).click();
      await expect
        .poll(() => card.getByRole('alert').textContent(), { timeout: 15_000 })
        .toContain('whole number');
      expect((await run(id)).status).toBe('paused');

      await card.getByLabel('New tokens limit').fill('1400');
      await card.getByRole('button', { name: 'Raise budget' }).click();
      // It continues where it paused and pauses again at the raised limit: 9 × 150 = 1,350 (a 10th would reach 1,500).
      const again = await pausedAt(id, 1350);
      expect(again.budget).toEqual({ tokens: 1400 });

      const next = page.getByRole('article', { name: 'budget (budget)' });
      await expect
        .poll(async () => next.getByLabel('Budget spent').textContent(), { timeout: 15_000 })
        .toContain('spent 1350 of 1400 tokens');
      await next.getByRole('button', { name: 'Stop run' }).click();
      const stopped = await waitFor(
        async () => ((await run(id)).status === 'cancelled' ? run(id) : undefined),
        { timeoutMs: 30_000, what: 'the run to be cancelled' },
      );
      expect(stopped.spent.tokens).toBe(1350);
      const requests = (await (await fetch(`${url}/v1/invocations/${id}/requests`)).json()) as {
        requests: { answeredBy: string; response: unknown }[];
      };
      expect(requests.requests).toMatchObject([
        { answeredBy: 'Ada Lovelace', response: { action: 'raise', budget: { tokens: 1400 } } },
        { answeredBy: 'Ada Lovelace', response: { action: 'stop' } },
      ]);
      await page.context().close();
      expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });
    },
    DEV_START_MS + 120_000,
  );
});
