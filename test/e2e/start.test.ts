/**
 * The README's run command, `npm start` (= `agentloom dev --walkthrough`), as a newcomer runs it: a real process
 * tree, no servers, no API key. It serves the example app, enqueues one run through its own HTTP API, prints the
 * run's live events with branch labels, and at the confirmation pause prints the exact CLI line and curl line that
 * approve it. Running that CLI line approves it; the server prints the rest of the run and keeps serving; the curl
 * line is valid too (sent afterwards, it is the same answer again: a no-op 200). The offline walk-through stays
 * `npm run demo` (demo.test.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import { waitFor } from '../support/assert/wait-for.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm start', () => {
  it('is agentloom dev --walkthrough; `npm run demo` is the offline walk-through', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node bin/agentloom.js dev --walkthrough');
    expect(pkg.scripts.demo).toBe('node bin/agentloom.js demo');
  });

  it('serves the example, runs it through its API live, prints the lines that approve the pause, keeps serving', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const start = new ServerProcess(
      ['start', '--', '--port', String(port), '--data', join(dir, 'data')],
      {},
      ['npm'],
    );
    await start.waitForOutput(/waiting for the answer…/, { timeoutMs: 180_000, what: 'the pause' });
    const out = start.stdout;
    expect(out).toContain(`agentloom dev: listening on ${url}`);
    expect(out).toContain(`walkthrough: POST ${url}/v1/apps/writer/invocations`);
    expect(out).toMatch(/^#\s*\d+ \[research\.0\] research_web: /m);
    expect(out).toMatch(/^#\s*\d+ \[research\.1\] research_docs: /m);
    expect(out).toMatch(/^#\s*\d+ critic: → exit_loop/m);
    expect(out).toMatch(/⏸ {2}paused: confirmation of publish_post\(/);
    const id = /^invocation (inv_\S+): its live events/m.exec(out)?.[1] as string;
    const cliLine = new RegExp(`^ {5}(npx agentloom approve ${id} \\S+ --url ${url})$`, 'm').exec(out)?.[1];
    const curlLine = new RegExp(
      `^ {5}(curl -X POST ${url}/v1/invocations/${id}/confirmations/\\S+ .*)$`,
      'm',
    ).exec(out)?.[1];
    // The run's page in the web console, served at / from the files `npm start` built.
    expect(out).toContain(
      `A human must confirm this call. Approve it in the web console:\n     ${url}/#/runs/${id}\n`,
    );
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<script type="module" src="\/console\/app\.js\?v=[0-9a-f]{12}">/);
    expect(cliLine, start.output).toBeDefined();
    expect(curlLine, start.output).toBeDefined();
    expect(curlLine).toContain(`-H 'content-type: application/json' -d '{"confirmed":true}'`);

    // The printed CLI line, exactly (its words contain no quotes).
    const approve = await runCli((cliLine as string).split(' ').slice(2));
    expect(approve.code, show(approve)).toBe(0);
    await start.waitForOutput(/^the run completed: Published "Durable agents"\.$/m, {
      timeoutMs: 90_000,
      what: 'the run to complete',
    });
    expect(start.stdout).toMatch(/^#\s*\d+ publisher: ← publish_post: \{"url"/m);
    expect(start.stdout).toContain(`still serving on ${url}`);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    // The printed curl line, exactly: the same answer again, a no-op 200 showing the completed run.
    const curl = await promisify(execFile)('sh', ['-c', curlLine as string]);
    expect(JSON.parse(curl.stdout)).toMatchObject({ id, status: 'completed' });

    // Ctrl-C (SIGINT to the whole foreground group, as a terminal sends it) stops npm and the server under it.
    await start.stop('SIGINT');
    await waitFor(
      () =>
        fetch(`${url}/healthz`).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 30_000, intervalMs: 200, what: 'the server to stop listening' },
    );
  }, 300_000);
});
