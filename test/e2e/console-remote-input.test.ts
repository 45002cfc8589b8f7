/**
 * A remote agent's question answered in the web console, in a real headless Chromium: a
 * RemoteA2aAgent on `agentloom dev` whose remote (an agent on `@a2a-js/sdk`'s server) asks for input pauses our run;
 * the inbox shows what the remote asked and its task; the answer typed there goes to the remote task, which
 * completes, and so does our run, with the remote's answer as its output.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { consoleBrowser, openPage } from '../support/processes/browser.js';
import { freePort, REPO } from '../support/processes/cli.js';
import { clientFor } from '../support/client/a2a-client.js';
import { DEV_START_MS, DevProcesses } from '../support/processes/a2a-dev.js';
import { startSdkAgent } from '../support/wire/a2a-sdk-server.js';
import { waitFor } from '../support/assert/wait-for.js';
import { A2A_URL_ENV } from './fixtures/remote-a2a-apps.js';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';

const QUESTION = 'Which colour should the otter be?';
const remote = await startSdkAgent(() => ({ ask: QUESTION }));
const chromium = consoleBrowser();
const devs = new DevProcesses();

afterAll(async () => {
  await devs.stopAll();
  await remote.close();
});

interface Run {
  status: string;
  output: string | null;
  pending: { callId: string; name: string; args: { taskId?: string } }[];
}

describe("a remote agent's question in the console", () => {
  it(
    'shows what the remote asked; the answer sent there completes the remote task and our run',
    async () => {
      const { url } = await devs.start(await freePort(), {
        apps: join(REPO, 'test/e2e/fixtures/remote-a2a-apps.ts'),
        env: { [A2A_URL_ENV]: remote.url },
      });
      const run = async (id: string): Promise<Run> =>
        (await (await fetch(`${url}/v1/invocations/${id}`)).json()) as Run;
      const created = await fetch(`${url}/v1/apps/remote_step/invocations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: 'console-e2e', input: 'paint an otter' }),
      });
      const { invocationId: id } = (await created.json()) as { invocationId: string };
      const paused = await waitFor(async () => ((await run(id)).status === 'paused' ? run(id) : undefined), {
        timeoutMs: 60_000,
        what: 'the run to pause on the remote question',
      });
      const taskId = paused.pending[0]?.args.taskId as string;
      expect(remote.tasks).toEqual([taskId]);

      const { page, trouble } = await openPage(chromium.browser);
      await page.goto(`${url}/#/inbox`);
      await page.getByLabel('Your name').fill('Grace Hopper');
      await page.getByLabel('Your name').press('Tab');
      const card = page.getByRole('article', { name: 'agentloom_remote_input (long-running call)' });
      await card.waitFor({ timeout: 15_000 });
      expect(await card.locator('dd.question').textContent()).toBe(QUESTION);
      expect(await card.textContent()).toContain(taskId);
      // An empty answer is refused before anything is sent.
      await card.getByRole('button', { name: 'Send answer' }).click();
      await expect
        .poll(() => card.getByRole('alert').textContent(), { timeout: 15_000 })
        .toContain('Write an answer');
      expect((await run(id)).status).toBe('paused');
      await card.getByLabel('Your answer (sent to the remote agent)').fill('blue');
      await card.getByRole('button', { name: 'Send answer' }).click();

      const done = await waitFor(async () => ((await run(id)).status === 'completed' ? run(id) : undefined), {
        timeoutMs: 60_000,
        what: 'our run to complete',
      });
      expect(done.output).toBe('answered: blue');
      expect(remote.received).toEqual(['paint an otter', 'blue']);
      const remoteTask = await (await clientFor(remote.url)).getTask({ tenant: '', id: taskId });
      expect(remoteTask.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const requests = (await (await fetch(`${url}/v1/invocations/${id}/requests`)).json()) as {
        requests: { answeredBy: string; response: unknown }[];
      };
      expect(requests.requests).toMatchObject([{ answeredBy: 'Grace Hopper', response: { text: 'blue' } }]);
      await page.context().close();
      expect(trouble).toEqual({ uncaught: [], consoleErrors: [] });
    },
    DEV_START_MS + 120_000,
  );
});
