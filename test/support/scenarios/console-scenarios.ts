/**
 * The web console driven in a real Chromium against a running server — `agentloom dev` on PGlite, or `agentloom
 * api` with a worker on PostgreSQL and Redis — on the apps of test/e2e/fixtures/console-apps.ts (those of cli-apps.ts
 * and `vault`), each action checked through the HTTP API after. The server has API keys: `ops` sees every app,
 * `writers` only `writer`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { openPage, type PageTrouble } from '../processes/browser.js';
import { REPO, runCli, show } from '../processes/cli.js';
import { waitFor } from '../assert/wait-for.js';
import { apiClient, type ApiCall, type Json } from '../client/http-client.js';
import { runReaches as waitForRun } from '../client/runs.js';

/** Where the console runs and the keys it knows. */
export interface ConsoleTarget {
  url: string;
  /** A key that sees every app (its name: `ops`). */
  opsKey: string;
  /** A key that sees only the app `writer` (its name: `writers`). */
  writersKey: string;
  /** Take the README's screenshots (docs/console-*.png) on the way. */
  screenshots?: boolean;
  /** The server's AGENTLOOM_TRACE_URL, when it has one: a run's trace id is then a link. */
  traceUrl?: string;
}

/**
 * How long the console may take to show what the server already has: it reloads each second, but a busy 2-core
 * machine running other test files beside this one can take tens of seconds to render a page (15 s was seen to
 * fall short). Only the upper bound: a page that shows it sooner goes on at once.
 */
const SHOWS_MS = 60_000;

interface InvocationJson {
  id: string;
  sessionId: string;
  status: string;
  output: string | null;
  pending: { callId: string; kind: string; name: string }[];
}

/** The HTTP API as the `ops` key's holder; a refused call fails the scenario, quoting the answer. */
const opsClient = (t: ConsoleTarget): ApiCall =>
  apiClient({ base: t.url, bearer: t.opsKey, requireOk: true });

/** `method path` (with `body` as JSON) as the `ops` key's holder: the answer's body. */
async function api<T>(t: ConsoleTarget, path: string, method = 'GET', body?: unknown): Promise<T> {
  return (await opsClient(t)(method, path, body)).body as T;
}

async function enqueue(t: ConsoleTarget, app: string, input: string): Promise<string> {
  const run = { userId: 'console-e2e', input };
  return (await api<{ invocationId: string }>(t, `/v1/apps/${app}/invocations`, 'POST', run)).invocationId;
}

/** Waits until the run has this status (through the API). */
async function runReaches(t: ConsoleTarget, id: string, status: string | RegExp): Promise<InvocationJson> {
  return (await waitForRun(opsClient(t), id, status)) as Json & InvocationJson;
}

async function screenshot(t: ConsoleTarget, page: Page, name: string): Promise<void> {
  if (!t.screenshots) return;
  const dir = join(REPO, 'docs');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `console-${name}.png`) });
}

/** Signs in with `key` on the sign-in form. */
async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: SHOWS_MS });
}

/** The card of a waiting call, found by its tool name within the run it belongs to. */
function card(page: Page, tool: string, kind: string) {
  return page.getByRole('article', { name: `${tool} (${kind})` });
}

/**
 * Sign-in (a wrong key refused, plainly), a run started from the CLI appearing in the list without a reload, its
 * pause in the inbox, the run page's tree and events, Approve on the run page, and the run completing on the page
 * still open, with the audit trail saying who approved. Returns the page's trouble for the caller to assert after
 * every scenario.
 */
export async function approveFromConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const { page, trouble } = await openPage(browser);
  await page.goto(t.url);
  // The server has keys: the console asks for one.
  await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: SHOWS_MS });
  await page.getByLabel('API key').fill('not-a-key-of-this-server');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect
    .poll(() => page.getByRole('alert').textContent(), { timeout: SHOWS_MS })
    .toContain('That key was refused');
  await signIn(page, t.opsKey);

  // A run started from the CLI shows in the list, with no reload (a marker set on the window survives).
  await page.evaluate(() => ((globalThis as unknown as { marker: string }).marker = 'same page'));
  const run = await runCli(['run', 'writer', 'Write a short post about durable AI agents', '--url', t.url], {
    env: { AGENTLOOM_API_KEY: t.opsKey },
  });
  expect(run.code, show(run)).toBe(0);
  const id = run.stdout.trim();
  const started = Date.now();
  await page.locator(`tr[data-run="${id}"]`).waitFor({ timeout: SHOWS_MS });
  const appearedMs = Date.now() - started;
  console.log(`console: a run started from the CLI showed in the list after ${appearedMs} ms`);
  // It pauses for the publisher's confirmation: "needs you".
  await page.locator(`tr[data-run="${id}"] .needs`).waitFor({ timeout: SHOWS_MS });
  await screenshot(t, page, 'runs');

  // The inbox: the tool, its arguments, the run.
  await page.getByRole('link', { name: /^Inbox/ }).click();
  const call = card(page, 'publish_post', 'confirmation').filter({
    has: page.locator(`a[href="#/runs/${id}"]`),
  });
  await call.waitFor({ timeout: SHOWS_MS });
  const args = await call.getByLabel('Arguments of publish_post').textContent();
  expect(JSON.parse(args ?? '')).toMatchObject({ title: 'Durable agents' });
  await screenshot(t, page, 'inbox');

  // The run page: the tree (research branches, the loop and its iterations, the publisher) and the events so far.
  await call.getByRole('link', { name: id.replace(/^inv_/, '').slice(0, 8) }).click();
  await page.getByRole('heading', { name: `Run ${id}` }).waitFor({ timeout: SHOWS_MS });
  const tree = page.getByRole('list', { name: 'Node tree' });
  await tree.locator('[data-path="writer_pipeline/publisher"] .status-paused').waitFor({ timeout: SHOWS_MS });
  const treeText = (await tree.textContent()) ?? '';
  for (const expected of [
    'research_web',
    'research_docs',
    'branch research.0',
    'branch research.1',
    'refine',
  ])
    expect(treeText).toContain(expected);
  expect(treeText).toMatch(/iteration 2, ended by escalation/);
  expect(treeText).toContain('2 of 3 steps done');
  const events = page.getByRole('list', { name: 'Events' });
  await events.getByText('exit_loop').first().waitFor({ timeout: SHOWS_MS });
  expect(await events.locator('li').count()).toBeGreaterThanOrEqual(10);
  await screenshot(t, page, 'run');
  // The run's trace id (derived from its id: no caller's traceparent), a link when the server has a template.
  const traceId = id.replace(/^inv_/, '').replaceAll('-', '');
  const trace = page.locator('dd.trace');
  expect(await trace.textContent()).toBe(traceId);
  const href = await trace
    .locator('a')
    .getAttribute('href', { timeout: t.traceUrl ? SHOWS_MS : 1 })
    .catch(() => null);
  expect(href).toBe(t.traceUrl ? t.traceUrl.replace('{traceId}', traceId) : null);

  // Approve here: the page, still open, streams the rest and says "completed".
  await page
    .getByRole('region', { name: 'Waiting for an answer' })
    .getByRole('button', { name: 'Approve' })
    .click();
  await page.locator('.summary .status-completed').waitFor({ timeout: SHOWS_MS });
  await events.getByText('Published "Durable agents".').waitFor({ timeout: SHOWS_MS });
  await page
    .getByRole('table')
    .filter({ hasText: 'Answered by' })
    .locator('td.answered-by', { hasText: 'ops' })
    .waitFor({ timeout: SHOWS_MS });
  expect(await page.evaluate(() => (globalThis as unknown as { marker?: string }).marker)).toBe('same page');

  // Through the API: completed, approved by the key's holder.
  const done = await runReaches(t, id, 'completed');
  expect(done.output).toBe('Published "Durable agents".');
  const { requests } = await api<{ requests: { status: string; answeredBy: string; response: unknown }[] }>(
    t,
    `/v1/invocations/${id}/requests`,
  );
  expect(requests).toMatchObject([{ status: 'answered', answeredBy: 'ops', response: { confirmed: true } }]);
  await page.context().close();
  return trouble;
}

/** Reject from the inbox; a long-running call answered with JSON (bad JSON refused first); an answer given first. */
export async function answersFromConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const { page, trouble } = await openPage(browser);
  await page.goto(t.url);
  await signIn(page, t.opsKey);
  const mail = await enqueue(t, 'mail', 'mail bob');
  const ticket = await enqueue(t, 'ticket', 'open a ticket');
  const raced = await enqueue(t, 'mail', 'mail bob again');
  await Promise.all([mail, ticket, raced].map((id) => runReaches(t, id, 'paused')));
  await page.getByRole('link', { name: /^Inbox/ }).click();

  // Reject.
  const mailCard = card(page, 'send_mail', 'confirmation').filter({
    has: page.locator(`a[href="#/runs/${mail}"]`),
  });
  await mailCard.getByLabel('Note or JSON payload (optional)').fill('not to bob');
  await mailCard.getByRole('button', { name: 'Reject' }).click();
  await mailCard.waitFor({ state: 'detached', timeout: SHOWS_MS });
  const rejected = await runReaches(t, mail, 'completed');
  expect(rejected.output).toMatch(/^mail not sent: /);
  const mailRequests = await api<{ requests: { response: unknown; answeredBy: string }[] }>(
    t,
    `/v1/invocations/${mail}/requests`,
  );
  expect(mailRequests.requests).toMatchObject([
    { answeredBy: 'ops', response: { confirmed: false, payload: 'not to bob' } },
  ]);

  // A long-running call: JSON checked before it is sent.
  const ticketCard = card(page, 'open_ticket', 'long-running call').filter({
    has: page.locator(`a[href="#/runs/${ticket}"]`),
  });
  const response = ticketCard.getByLabel('Response (JSON object)');
  await response.fill('{"resolved": tru');
  await ticketCard.getByRole('button', { name: 'Send response' }).click();
  await expect
    .poll(() => ticketCard.getByRole('alert').textContent(), { timeout: SHOWS_MS })
    .toContain('is not valid JSON');
  expect((await api<InvocationJson>(t, `/v1/invocations/${ticket}`)).status).toBe('paused');
  await response.fill('{"resolved": true, "by": "console"}');
  await ticketCard.getByRole('button', { name: 'Send response' }).click();
  const answered = await runReaches(t, ticket, 'completed');
  // jsonb keeps its own key order: compare the JSON, not the text.
  expect(answered.output).toMatch(/^ticket answered: \{/);
  expect(JSON.parse(answered.output?.replace(/^ticket answered: /, '') ?? '')).toEqual({
    resolved: true,
    by: 'console',
  });

  // Someone answers first (through the API, as another key holder would): the console says who.
  const racedCard = card(page, 'send_mail', 'confirmation').filter({
    has: page.locator(`a[href="#/runs/${raced}"]`),
  });
  await racedCard.waitFor({ timeout: SHOWS_MS });
  const [pending] = (await api<InvocationJson>(t, `/v1/invocations/${raced}`)).pending;
  await api(t, `/v1/invocations/${raced}/confirmations/${pending?.callId}`, 'POST', { confirmed: false });
  await racedCard.getByRole('button', { name: 'Approve' }).click();
  // Said on the card, and in the list of this page's answers (the card leaves at the next reload).
  const outcome = page
    .getByRole('list', { name: 'Your answers' })
    .getByRole('listitem')
    .filter({ hasText: `of run ${raced}` });
  await expect
    .poll(() => outcome.first().textContent(), { timeout: SHOWS_MS })
    .toMatch(/: Already answered by ops at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}: call /);
  expect((await runReaches(t, raced, 'completed')).output).toMatch(/^mail not sent/);
  await page.context().close();
  return trouble;
}

/**
 * A question a running tool asks (ToolContext.elicit, as an MCP server's elicitation): shown in the inbox with its
 * fields while the run is still running; a required field left empty is refused on the page; Accept with the
 * fields completes the run with them, and the audit trail says who answered.
 */
export async function elicitationFromConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const { page, trouble } = await openPage(browser);
  await page.goto(t.url);
  await signIn(page, t.opsKey);
  const id = await enqueue(t, 'survey', 'sign me up');
  await waitFor(
    async () =>
      (await api<InvocationJson>(t, `/v1/invocations/${id}`)).pending.find((p) => p.kind === 'elicitation'),
    { timeoutMs: 60_000, what: `run ${id} to ask its question` },
  );
  expect((await api<InvocationJson>(t, `/v1/invocations/${id}`)).status).toBe('running');
  await page.getByRole('link', { name: /^Inbox/ }).click();
  const question = card(page, 'ask_user', 'question').filter({
    has: page.locator(`a[href="#/runs/${id}"]`),
  });
  await question.waitFor({ timeout: SHOWS_MS });
  expect(await question.textContent()).toContain('Who is signing up? · from signup form');
  await question.getByLabel('Age').fill('36');
  await question.getByRole('button', { name: 'Accept' }).click();
  await expect
    .poll(() => question.getByRole('alert').textContent(), { timeout: SHOWS_MS })
    .toContain('Name is required');
  expect((await api<InvocationJson>(t, `/v1/invocations/${id}`)).status).toBe('running');
  await question.getByLabel('Name *').fill('Ada');
  await question.getByRole('button', { name: 'Accept' }).click();
  const done = await runReaches(t, id, 'completed');
  expect(JSON.parse(done.output?.replace(/^signed up: /, '') ?? '')).toEqual({
    action: 'accept',
    content: { name: 'Ada', age: 36 },
  });
  const requests = await api<{ requests: unknown[] }>(t, `/v1/invocations/${id}/requests`);
  expect(requests.requests).toMatchObject([
    {
      kind: 'elicitation',
      status: 'answered',
      answeredBy: 'ops',
      response: { action: 'accept', content: { name: 'Ada', age: 36 } },
    },
  ]);
  await page.context().close();
  return trouble;
}

/**
 * A tool's credential: a run of `vault` for a user with no stored key pauses with a call of kind `auth`;
 * the inbox says what it needs (scheme, credential key); an empty key is refused on the page; the key typed in a
 * password field on the run page and sent with Enter completes the run, and the tool saw it (its length and hash
 * in the final answer). The key is never in the page's HTML (typed, or after the answer), never left in a field,
 * and never in what the API returns of the run: its events, its requests (the audit trail), its session, the run.
 */
export async function credentialFromConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const planted = `planted-vault-key-${randomBytes(12).toString('hex')}`;
  const { page, trouble } = await openPage(browser);
  type WithDocument = { document: { documentElement: { outerHTML: string } } };
  const html = () =>
    page.evaluate(() => (globalThis as unknown as WithDocument).document.documentElement.outerHTML);
  await page.goto(t.url);
  await signIn(page, t.opsKey);
  // A user of its own: a credential stored by another scenario's run would let the call through without a pause.
  const body = { userId: `vault-${randomBytes(4).toString('hex')}`, input: 'open the vault' };
  const { invocationId: id } = await api<{ invocationId: string }>(
    t,
    '/v1/apps/vault/invocations',
    'POST',
    body,
  );
  const paused = await runReaches(t, id, 'paused');
  expect(paused.pending).toMatchObject([{ kind: 'auth', name: 'open_vault' }]);

  // The inbox: what the call needs, never a secret; an empty key refused before anything is sent.
  await page.getByRole('link', { name: /^Inbox/ }).click();
  const inboxCard = card(page, 'open_vault', 'credential').filter({
    has: page.locator(`a[href="#/runs/${id}"]`),
  });
  await inboxCard.waitFor({ timeout: SHOWS_MS });
  const asks = (await inboxCard.locator('dl.facts').last().textContent()) ?? '';
  expect(asks).toContain('an API key, sent in the header X-Api-Key');
  expect(asks).toContain('vault');
  await inboxCard.getByRole('button', { name: 'Save credential' }).click();
  await expect
    .poll(() => inboxCard.getByRole('alert').textContent(), { timeout: SHOWS_MS })
    .toContain('The key is required');
  expect((await api<InvocationJson>(t, `/v1/invocations/${id}`)).status).toBe('paused');

  // The run page: the key typed in a masked field, sent with Enter.
  await inboxCard.getByRole('link', { name: id.replace(/^inv_/, '').slice(0, 8) }).click();
  await page.getByRole('heading', { name: `Run ${id}` }).waitFor({ timeout: SHOWS_MS });
  const call = page
    .getByRole('region', { name: 'Waiting for an answer' })
    .getByRole('article', { name: 'open_vault (credential)' });
  const field = call.getByLabel('Key (sent in header X-Api-Key)');
  expect(await field.getAttribute('type')).toBe('password');
  expect(await field.getAttribute('autocomplete')).toBe('off');
  await field.fill(planted);
  expect(await html()).not.toContain(planted);
  await field.press('Enter');
  const done = await runReaches(t, id, 'completed');
  // jsonb keeps its own key order: compare the JSON, not the text.
  expect(done.output).toMatch(/^vault opened: \{/);
  expect(JSON.parse(done.output?.replace(/^vault opened: /, '') ?? '')).toEqual({
    keyLength: planted.length,
    keySha256: createHash('sha256').update(planted).digest('hex').slice(0, 12),
  });
  await page.locator('.summary .status-completed').waitFor({ timeout: SHOWS_MS });
  await page
    .getByRole('table')
    .filter({ hasText: 'Answered by' })
    .locator('td.answered-by', { hasText: 'ops' })
    .waitFor({ timeout: SHOWS_MS });

  // Nowhere on the page (text, attributes, the answers list, any field's value) nor in what the API returns.
  expect(await html()).not.toContain(planted);
  for (const input of await page.locator('input, textarea').all())
    expect(await input.inputValue()).not.toContain(planted);
  const { requests } = await api<{ requests: unknown[] }>(t, `/v1/invocations/${id}/requests`);
  expect(requests).toMatchObject([{ kind: 'auth', status: 'answered', answeredBy: 'ops' }]);
  for (const path of [
    `/v1/invocations/${id}/events?limit=10000`,
    `/v1/invocations/${id}/requests`,
    `/v1/sessions/${done.sessionId}`,
  ]) {
    expect(JSON.stringify(await api(t, path))).not.toContain(planted);
  }
  expect(JSON.stringify(done)).not.toContain(planted);
  await page.context().close();
  return trouble;
}

/** Cancel and retry from the run page, each checked through the API. */
export async function cancelRetryFromConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const { page, trouble } = await openPage(browser);
  await page.goto(t.url);
  await signIn(page, t.opsKey);
  const id = await enqueue(t, 'waiter', 'wait');
  await runReaches(t, id, 'running');
  await page.goto(`${t.url}/#/runs/${id}`);
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await runReaches(t, id, 'cancelled');
  await page.locator('.summary .status-cancelled').waitFor({ timeout: SHOWS_MS });
  await page.getByRole('button', { name: 'Retry run' }).click();
  await runReaches(t, id, /^(queued|running)$/);
  await page.getByRole('button', { name: 'Cancel run' }).waitFor({ timeout: SHOWS_MS });
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await runReaches(t, id, 'cancelled');
  await page.context().close();
  return trouble;
}

/** A key for one app sees only that app's runs and calls; another app's run is "not found". */
export async function keyScopeInConsole(browser: Browser, t: ConsoleTarget): Promise<PageTrouble> {
  const mail = await enqueue(t, 'mail', 'mail for the scope check');
  const writer = await enqueue(t, 'writer', 'a post for the scope check');
  await Promise.all([mail, writer].map((id) => runReaches(t, id, 'paused')));
  const { page, trouble } = await openPage(browser);
  await page.goto(t.url);
  await signIn(page, t.writersKey);
  await page.locator(`tr[data-run="${writer}"]`).waitFor({ timeout: SHOWS_MS });
  const apps = await page.locator('table.runs tbody tr td:nth-child(2)').allTextContents();
  expect(new Set(apps)).toEqual(new Set(['writer']));
  expect(await page.locator(`tr[data-run="${mail}"]`).count()).toBe(0);
  await page.getByRole('link', { name: /^Inbox/ }).click();
  await card(page, 'publish_post', 'confirmation').first().waitFor({ timeout: SHOWS_MS });
  expect(await card(page, 'send_mail', 'confirmation').count()).toBe(0);
  await page.goto(`${t.url}/#/runs/${mail}`);
  await expect
    .poll(() => page.getByRole('alert').first().textContent(), { timeout: SHOWS_MS })
    .toBe(`NOT_FOUND: invocation ${mail} does not exist`);
  // Signing out forgets the key.
  await page.goto(t.url);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor({ timeout: SHOWS_MS });
  await page.context().close();
  await api(t, `/v1/invocations/${mail}/cancel`, 'POST');
  await api(t, `/v1/invocations/${writer}/cancel`, 'POST');
  return trouble;
}

/** The first load of the console (page, script, stylesheet) as the browser received it, compressed. */
export async function firstLoadBytes(browser: Browser, t: ConsoleTarget): Promise<number> {
  const { page } = await openPage(browser);
  const sizes: Promise<number>[] = [];
  page.on('requestfinished', (request) => {
    if (['document', 'script', 'stylesheet'].includes(request.resourceType())) {
      sizes.push(request.sizes().then((s) => s.responseBodySize + s.responseHeadersSize));
    }
  });
  const started = Date.now();
  await page.goto(t.url, { waitUntil: 'load' });
  await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: SHOWS_MS });
  console.log(`console: first load to the sign-in form in ${Date.now() - started} ms`);
  const total = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  expect(sizes.length).toBe(3);
  await page.context().close();
  return total;
}
