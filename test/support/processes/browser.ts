/**
 * A real headless Chromium for the console's tests: Debian's `chromium` (or CHROMIUM_PATH), driven by
 * playwright-core, which downloads nothing; `consoleBrowser` is the console tests' setting (console built, browser
 * launched for the file). Every page records uncaught errors and console errors, so a test can
 * assert the console ran clean.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { buildConsole } from '../../../console/build.js';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The browser binary: CHROMIUM_PATH, else the first of Debian's usual paths that exists. */
export function chromiumPath(): string {
  const path = process.env.CHROMIUM_PATH ?? CANDIDATES.find((p) => existsSync(p));
  if (!path || !existsSync(path)) {
    throw new Error(
      `no Chromium found (tried ${process.env.CHROMIUM_PATH ?? CANDIDATES.join(', ')}): apt-get install chromium, or set CHROMIUM_PATH`,
    );
  }
  return path;
}

/** Launches headless Chromium (no sandbox when running as root, as CI does). */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

/**
 * The console's browser tests' setting: the console built and a headless Chromium launched in `beforeAll` (building
 * may take long on a cold machine, hence its own timeout), the browser closed in `afterAll`. Call at the top level of
 * a file or describe; `browser` is set once its `beforeAll` ran.
 */
export function consoleBrowser(): { readonly browser: Browser } {
  let browser: Browser | undefined;
  beforeAll(async () => {
    await buildConsole();
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });
  return {
    get browser() {
      if (!browser) throw new Error('the browser is launched in beforeAll: read it inside a hook or a test');
      return browser;
    },
  };
}

/** What went wrong in a page: uncaught exceptions, and console errors other than refused requests. */
export interface PageTrouble {
  uncaught: string[];
  consoleErrors: string[];
}

/**
 * Opens a page that records its trouble. A response with an error status (401 for a wrong key, 404, 409 for an
 * answer given first) is logged by Chromium as "Failed to load resource": that is the console doing its job,
 * not an error of its own, so it is left out of `consoleErrors`.
 */
export async function openPage(browser: Browser): Promise<{ page: Page; trouble: PageTrouble }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const trouble: PageTrouble = { uncaught: [], consoleErrors: [] };
  page.on('pageerror', (err) => trouble.uncaught.push(err.stack ?? err.message));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    if (/^Failed to load resource: the server responded with a status of \d+/.test(message.text())) return;
    trouble.consoleErrors.push(message.text());
  });
  return { page, trouble };
}
