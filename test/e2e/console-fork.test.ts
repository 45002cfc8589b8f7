/**
 * The console's fork and diff in a real headless Chromium against a real API server: on
 * the page of a completed run, "Fork from here" on a loop iteration's node, a state patch and a new instruction in
 * the form, the new run opens and completes; "Diff with the original" shows both runs aligned by node path with the
 * first divergence marked. Checked through the engine after; no error in the browser throughout.
 */
import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../src/index.js';
import { consoleBrowser, openPage } from '../support/processes/browser.js';
import { serveEngine } from '../support/services/api-servers.js';
import { backends, engineOn } from '../support/services/engines.js';
import { forkApps, Ledger, respond } from '../fixtures/apps/fork-apps.js';

const SHOWS_MS = 60_000;

describe('fork and diff in the console', () => {
  const model = new ScriptedModel({ respond });
  const chromium = consoleBrowser();
  const api = serveEngine(() => engineOn(backends[0]!, { apps: forkApps(model, new Ledger()) }), {
    processMetrics: false,
  });

  it('forks from a node of a completed run with a state patch and an instruction, opens the new run and the diff', async () => {
    const { invocationId: id } = await api.engine.enqueue({ app: 'writer', userId: 'u', input: 'tea' });
    expect((await api.engine.wait(id, { timeoutMs: 30_000 })).status).toBe('completed');
    const calls = model.calls;
    const { page, trouble } = await openPage(chromium.browser);
    await page.goto(`${api.base}/#/runs/${id}`);
    await page
      .getByRole('button', { name: 'Fork from writer/refine/drafter#1' })
      .click({ timeout: SHOWS_MS });
    const form = page.getByRole('form', { name: 'Fork this run' });
    await form.getByLabel('State patch (JSON)').fill('{"approve": true}');
    await form.getByLabel('Instruction of').selectOption('drafter');
    await form.getByLabel('New instruction').fill('Be brief about {notes}.');
    await form.getByRole('button', { name: 'Fork run' }).click();

    // The new run's page opens.
    await page.waitForURL(/#\/runs\/inv_/, { timeout: SHOWS_MS });
    const forkId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    expect(forkId).not.toBe(id);
    const fork = await api.engine.wait(forkId, { timeoutMs: 30_000 });
    expect(fork).toMatchObject({
      status: 'completed',
      forkedFrom: id,
      fork: {
        at: 'writer/refine/drafter#1',
        state: { approve: true },
        instruction: { drafter: 'Be brief about {notes}.' },
      },
    });
    expect(model.calls - calls).toBe(2); // drafter#1 and critic#1 only
    await page.locator('.forked-from').getByText(id).waitFor({ timeout: SHOWS_MS });

    // The diff of the two.
    await page.getByRole('link', { name: 'Diff with the original' }).click();
    await page.getByRole('heading', { name: 'Diff' }).waitFor({ timeout: SHOWS_MS });
    const first = page.locator('tr.first-divergence');
    await first.waitFor({ timeout: SHOWS_MS });
    expect(await first.getAttribute('data-path')).toBe('writer/refine/drafter#1');
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'First divergence: writer/refine/drafter#1',
    );
    expect(await page.locator('tr[data-path="writer/researcher"]').getAttribute('class')).toBe('same');
    expect(await page.locator('tr[data-path="writer/refine/drafter#2"] td.absent').count()).toBe(1);
    expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });
  });
});
