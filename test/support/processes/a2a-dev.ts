/**
 * `agentloom dev` processes for the A2A e2e tests: started on a port with an apps module and a data folder of the
 * test's, their URL read from what they print, all stopped by `stopAll`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, ServerProcess } from './cli.js';

/** How long one `dev` may take to start on a busy machine (ms). */
export const DEV_START_MS = 170_000;

/** The apps of the CLI e2e tests (mail, ticket, waiter, writer, …). */
export const CLI_APPS = join(REPO, 'test/e2e/fixtures/cli-apps.ts');

/** A set of `dev` processes sharing one temporary folder. */
export class DevProcesses {
  readonly dir = mkdtempSync(join(tmpdir(), 'agentloom-a2a-'));
  private readonly running: ServerProcess[] = [];

  /**
   * Starts `agentloom dev` on `port` with `apps` (default the CLI apps), its data under `data` (a name in the
   * shared folder; the same name again reuses the database: a restart), with `args` and `env` added.
   */
  async start(
    port: number,
    options: { apps?: string; data?: string; env?: Record<string, string>; args?: string[] } = {},
  ): Promise<{ dev: ServerProcess; url: string }> {
    const args = ['dev', '--port', String(port), '--apps', options.apps ?? CLI_APPS];
    const dev = new ServerProcess(
      [...args, ...(options.args ?? []), '--data', join(this.dir, options.data ?? 'data')],
      options.env ?? {},
    );
    this.running.push(dev);
    const match = await dev.waitForOutput(/^agentloom dev: listening on (http:\/\/\S+)$/m, {
      timeoutMs: DEV_START_MS,
      what: 'dev to listen',
    });
    return { dev, url: match[1] as string };
  }

  /** Stops every process started and removes the folder. */
  async stopAll(): Promise<void> {
    await Promise.all(this.running.map((p) => p.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The number of invocations of `app` stored by the server at `url` (its /v1 API). */
export async function invocationCount(url: string, app: string): Promise<number> {
  const answer = await fetch(`${url}/v1/invocations?app=${app}&limit=100`);
  if (!answer.ok) throw new Error(`GET /v1/invocations answered ${answer.status}: ${await answer.text()}`);
  return ((await answer.json()) as { invocations: unknown[] }).invocations.length;
}
