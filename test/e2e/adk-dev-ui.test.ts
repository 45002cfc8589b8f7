/**
 * ADK's own dev UI (`@google/adk-devtools` 2.0, the Angular app `adk web` serves) driven in a real
 * headless Chromium (Debian's `chromium`, playwright-core) against `agentloom dev` started where that package is
 * installed, on PGlite from a clean data directory, with the example app and the CLI tests' apps:
 *
 * - the UI lists the apps; picking `writer` and sending a message creates a session and streams the run's events
 *   (the research branches, the loop's exit_loop) until the confirmation card of `publish_post`;
 * - the page is reloaded mid-pause: the reopened session shows the card again, and approving it there resumes the
 *   same invocation, which completes (GET /v1), with publish_post run exactly once;
 * - another app's confirmation rejected from the UI completes that run without the tool's effect;
 * - its side panel shows the server's version, language and language version (`/version` in adk-python's keys);
 * - no uncaught error and no console error in the page, other than the requests the UI makes for what agentloom
 *   does not serve (its builder and evals: 404) and the Google fonts it cannot reach here.
 *
 * Nothing of the UI is ours: it is the package as npm serves it (test/support/processes/adk-devtools.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_INPUT } from '../../src/cli/dev/demo-app.js';
import { adkDevtoolsProject } from '../support/processes/adk-devtools.js';
import { launchBrowser, openPage, type PageTrouble } from '../support/processes/browser.js';
import { CLI, freePort, REPO, ServerProcess } from '../support/processes/cli.js';

const APPS = join(REPO, 'test/e2e/fixtures/cli-apps.ts');
/** How long the UI gets to show what a run did (a busy machine runs the whole pipeline in this time). */
const SHOWS_MS = 60_000;

const dir = mkdtempSync(join(tmpdir(), 'agentloom-adk-ui-'));
let browser: Browser;
let dev: ServerProcess;
let url: string;

beforeAll(async () => {
  const project = await adkDevtoolsProject();
  browser = await launchBrowser();
  const port = await freePort();
  dev = new ServerProcess(
    ['dev', '--port', String(port), '--apps', APPS, '--data', join(dir, 'data')],
    { AGENTLOOM_LEASE_MS: '30000' },
    [CLI],
    { cwd: project },
  );
  await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: 170_000,
    what: 'dev to listen',
  });
  url = `http://127.0.0.1:${port}`;
}, 300_000);

afterAll(async () => {
  await browser?.close();
  dev?.child.kill('SIGTERM');
  await dev?.exited;
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** Opens the UI; the Google fonts it asks for answer 404 (nothing outside this machine is reachable). */
async function openUi(): Promise<{ page: Page; trouble: PageTrouble }> {
  const opened = await openPage(browser);
  await opened.page.route(/^https?:\/\/(?!127\.0\.0\.1[:/])/, (route) =>
    route.fulfill({ status: 404, body: '' }),
  );
  await opened.page.goto(`${url}/dev-ui/`);
  return opened;
}

async function pickApp(page: Page, app: string): Promise<void> {
  await page.getByRole('button', { name: 'Select an app' }).click();
  await page.getByText(app, { exact: true }).click();
}

async function send(page: Page, text: string): Promise<void> {
  const box = page.getByPlaceholder('Type a message...');
  await box.fill(text);
  await box.press('Enter');
}

/** The confirmation card's checkbox: the card is on the page. */
function confirmationCard(page: Page) {
  return page.getByText('Confirmed', { exact: true });
}

/** The session the UI has open, from its address (`?app=…&userId=…&session=…`). */
function sessionOf(page: Page): { app: string; userId: string; session: string } {
  const params = new URL(page.url()).searchParams;
  return {
    app: params.get('app') ?? '',
    userId: params.get('userId') ?? '',
    session: params.get('session') ?? '',
  };
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(`${url}${path}`);
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

interface AdkEventJson {
  invocationId: string;
  author: string;
  nodeInfo?: { path: string };
  content?: {
    parts?: {
      functionCall?: { name: string };
      functionResponse?: { name: string; response: Record<string, unknown> };
    }[];
  };
}

async function sessionEvents(page: Page): Promise<AdkEventJson[]> {
  const { app, userId, session } = sessionOf(page);
  const body = await getJson<{ events: AdkEventJson[] }>(`/apps/${app}/users/${userId}/sessions/${session}`);
  return body.events;
}

/** The invocation's paused calls and their answers (GET /v1/invocations/:id/requests). */
async function auditTrail(invocationId: string | undefined): Promise<{ name: string; response: unknown }[]> {
  const body = await getJson<{ requests: { name: string; response: unknown }[] }>(
    `/v1/invocations/${invocationId}/requests`,
  );
  return body.requests;
}

/** The function responses of a tool in the session's events. */
function responsesOf(events: AdkEventJson[], tool: string): Record<string, unknown>[] {
  return events.flatMap((e) =>
    (e.content?.parts ?? []).flatMap((p) =>
      p.functionResponse?.name === tool ? [p.functionResponse.response] : [],
    ),
  );
}

/** The page ran clean: no uncaught error, no console error but refused or missing resources. */
function expectClean(trouble: PageTrouble): void {
  expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });
}

describe("ADK's dev UI against agentloom dev", () => {
  it('prints where the UI is', () => {
    expect(dev.stdout).toContain(`  adk   ${url}/dev-ui/ (ADK's dev UI, from @google/adk-devtools)`);
  });

  it("shows the server's version, language and language version in its side panel", async () => {
    const { page, trouble } = await openUi();
    const valueOf = (label: string) =>
      page.getByText(label, { exact: true }).locator('xpath=following-sibling::span[1]');
    // Rendered once /version has answered; a key the UI does not read would leave its value empty.
    await valueOf('Lang Version:').waitFor({ state: 'attached', timeout: SHOWS_MS });
    expect((await valueOf('Lang Version:').textContent())?.trim()).toBe(process.version);
    expect((await valueOf('Language:').textContent())?.trim()).toBe('typescript');
    expect((await valueOf('Version:').textContent())?.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expectClean(trouble);
    await page.context().close();
  });

  it('picks the example app, streams its run to the confirmation card, and approves it after a reload', async () => {
    const { page, trouble } = await openUi();
    await pickApp(page, 'writer');
    await send(page, EXAMPLE_INPUT);

    // The events stream in: the loop's exit_loop call, then the confirmation card of publish_post.
    await page.getByText('exit_loop()').first().waitFor({ timeout: SHOWS_MS });
    await confirmationCard(page).waitFor({ timeout: SHOWS_MS });
    await page.getByText('adk_request_confirmation').first().waitFor();
    const opened = sessionOf(page);
    expect(opened).toMatchObject({ app: 'writer', session: expect.stringMatching(/.+/) });

    const paused = await sessionEvents(page);
    const invocations = new Set(paused.map((e) => e.invocationId));
    expect(invocations.size).toBe(1);
    const [invocationId] = invocations as Set<string>;
    const before = await getJson<{ status: string; pending: { name: string }[] }>(
      `/v1/invocations/${invocationId}`,
    );
    expect(before.status).toBe('paused');
    expect(before.pending.map((p) => p.name)).toEqual(['publish_post']);
    // Node paths in adk-python's shape (name@run), as the UI draws a node's runs from them.
    expect(paused.map((e) => e.nodeInfo?.path)).toContain('writer_pipeline@1/refine@1/critic@2');

    // Reload mid-pause: the UI reopens the session from its address and shows the card again.
    await page.reload();
    await confirmationCard(page).waitFor({ timeout: SHOWS_MS });
    expect(sessionOf(page)).toEqual(opened);
    await confirmationCard(page).click();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText('Published "Durable agents".').waitFor({ timeout: SHOWS_MS });

    const after = await getJson<{ status: string; output: unknown }>(`/v1/invocations/${invocationId}`);
    expect(after).toMatchObject({ status: 'completed', output: 'Published "Durable agents".' });
    const events = await sessionEvents(page);
    // The same invocation resumed: the answer started no other.
    expect(new Set(events.map((e) => e.invocationId))).toEqual(new Set([invocationId]));
    // publish_post ran once: one result of its own (the other response is the confirmation request).
    expect(responsesOf(events, 'publish_post').filter((r) => r.published === true)).toHaveLength(1);
    expect(await auditTrail(invocationId)).toMatchObject([
      { name: 'publish_post', status: 'answered', response: { confirmed: true } },
    ]);
    expectClean(trouble);
    await page.context().close();
  });

  it('rejects a confirmation: the run completes without the tool', async () => {
    const { page, trouble } = await openUi();
    await pickApp(page, 'mail');
    await send(page, 'mail bob');
    await confirmationCard(page).waitFor({ timeout: SHOWS_MS });
    // Submit with "Confirmed" left unticked: a rejection.
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText(/^mail not sent:/).waitFor({ timeout: SHOWS_MS });

    const events = await sessionEvents(page);
    const [invocationId] = new Set(events.map((e) => e.invocationId));
    const done = await getJson<{ status: string; output: string }>(`/v1/invocations/${invocationId}`);
    expect(done.status).toBe('completed');
    expect(done.output).toMatch(/^mail not sent: /);
    expect(responsesOf(events, 'send_mail').some((r) => r.sent === true)).toBe(false);
    expect(await auditTrail(invocationId)).toMatchObject([
      { name: 'send_mail', status: 'answered', response: { confirmed: false } },
    ]);
    expectClean(trouble);
    await page.context().close();
  });
});
