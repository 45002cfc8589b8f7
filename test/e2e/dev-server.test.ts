/**
 * `agentloom dev` as a real process (PGlite + in-process queue + API + worker in one, no servers), on a free port:
 *
 * - without `--apps` it serves the example app on loopback only: a run of it driven only through HTTP — SSE with
 *   branch labels, a disconnect and a Last-Event-ID reconnect, the pause for confirmation answered on a stream that
 *   stays open, completion — receives every event exactly once; `status` and `events` show
 *   it through the API;
 * - with `--apps` (a TS module) every client command of the CLI is run against it with its exit code asserted
 *   (the `dev` half; the api + worker half is in api-server.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, REPO, runCli, ServerProcess, show } from '../support/processes/cli.js';
import {
  approveScenario,
  cancelScenario,
  rejectScenario,
  respondScenario,
  retryScenario,
  usageScenario,
  type CliTarget,
} from '../support/scenarios/cli-scenarios.js';
import { exampleRunOverSse } from '../support/scenarios/example-flow.js';
import { parseExposition, value } from '../support/assert/prometheus-text.js';

/** Starting on a fresh PGlite directory takes seconds; on a busy machine many more. */
const START_TIMEOUT_MS = 180_000;

const dir = mkdtempSync(join(tmpdir(), 'agentloom-dev-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `agentloom dev` on a free port; resolves with the process and its URL once it listens. */
async function startDev(args: string[]): Promise<{ dev: ServerProcess; url: string }> {
  const port = await freePort();
  const dev = new ServerProcess(['dev', '--port', String(port), ...args]);
  const match = await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
    timeoutMs: START_TIMEOUT_MS - 10_000,
    what: 'dev to listen',
  });
  return { dev, url: match[1] as string };
}

describe('agentloom dev, no --apps: the example app', () => {
  let dev: ServerProcess;
  let url: string;
  beforeAll(async () => {
    ({ dev, url } = await startDev(['--data', join(dir, 'example')]));
  }, START_TIMEOUT_MS);

  it('serves the example app on loopback only, and says so', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(dev.stdout).toContain('  app   writer (the example');
    expect(dev.stdout).toContain(`  web   ${url}/ (the console`);
    expect(dev.stdout).toContain(`  data  ${join(dir, 'example')} (PGlite, kept across restarts`);
    expect(dev.stderr).toMatch(
      /^warn: no API keys configured \(AGENTLOOM_API_KEYS\): listening on loopback only/m,
    );
    const apps = (await (await fetch(`${url}/v1/apps`)).json()) as { apps: { name: string }[] };
    expect(apps.apps.map((a) => a.name)).toEqual(['writer']);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it('runs the example through HTTP: live SSE with branches, reconnect, pause, confirm, completion', async () => {
    const id = await exampleRunOverSse(url);

    // The CLI reads the same run through the API: the node tree with the loop's iteration, events with branches.
    const status = await runCli(['status', id, '--url', url]);
    expect(status.code, show(status)).toBe(0);
    const lines = status.stdout.split('\n');
    expect(lines[0]).toBe(`invocation ${id}  app writer  status completed`);
    expect(lines).toContain('output Published "Durable agents".');
    expect(lines).toContain('  writer_pipeline  sequential  completed');
    expect(lines).toContain('    refine  loop  completed  iteration 1');
    expect(lines).toContain('      research_web  llm  completed  attempt 1');
    const events = await runCli(['events', id], { env: { AGENTLOOM_URL: url } });
    expect(events.code, show(events)).toBe(0);
    expect(events.stdout).toMatch(/^#\s*\d+ \[research\.0\] research_web: /m);
    expect(events.stdout).toMatch(/^#\s*\d+ \[research\.1\] research_docs: /m);
    expect(events.stdout).toMatch(/^#\s*\d+ publisher: Published/m);

    // dev's /metrics serves the worker's step metrics with the API's: valid text, and the run's steps counted.
    const metrics = parseExposition(await (await fetch(`${url}/metrics`)).text());
    expect(value(metrics, 'agentloom_steps_total', { outcome: 'completed' })).toBeGreaterThanOrEqual(5);
    expect(value(metrics, 'agentloom_step_queue_wait_seconds_count')).toBeGreaterThan(0);
    expect(value(metrics, 'agentloom_tool_calls_total', { tool: 'publish_post', outcome: 'ok' })).toBe(1);
    expect(value(metrics, 'agentloom_invocations_enqueued_total', { app: 'writer' })).toBeGreaterThanOrEqual(
      1,
    );
  });

  it('stops on SIGTERM with exit code 0', async () => {
    expect(await dev.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});

describe('agentloom dev --apps MODULE: every client command of the CLI', () => {
  const target = {} as CliTarget;
  let dev: ServerProcess;
  beforeAll(async () => {
    let url: string;
    ({ dev, url } = await startDev([
      '--apps',
      join(REPO, 'test/e2e/fixtures/cli-apps.ts'),
      '--data',
      join(dir, 'cli'),
    ]));
    target.url = url;
    expect(dev.stdout).toContain('  apps  writer, mail, ticket, survey, waiter, flaky');
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    expect(await dev.stop('SIGINT')).toEqual({ code: 0, signal: null });
  });

  it('run, events --follow (3 at the pause), status, approve --payload, events --follow (0)', () =>
    approveScenario(target));
  it('run --follow (3), reject, events --follow (0)', () => rejectScenario(target));
  it('respond answers a long-running call', () => respondScenario(target));
  it('cancel stops a running tool; events --follow exits 1', () => cancelScenario(target));
  it('a failed run: run --follow exits 1; retry; events --follow exits 0', () => retryScenario(target));
  it('bad usage exits 2; unknown ids, unknown apps and no server exit 1', async () => {
    await usageScenario(target, `http://127.0.0.1:${await freePort()}`);
  });
});
