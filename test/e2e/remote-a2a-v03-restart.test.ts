/**
 * A RemoteA2aAgent call open when `agentloom dev` is SIGKILLed, its remote an A2A v0.3 agent (`@a2a-js/sdk` 0.3.x's
 * own server, as kagent's and most deployed agents are): the remote holds its answer while our run's step stores
 * the task id; dev's process group is SIGKILLed; dev restarted on the same `--data` (PGlite) follows the stored task
 * instead of sending again, and completes the run with the remote's answer; the remote received one message. First
 * with the task ended before the restart; then with a remote whose store is slow to record the end (a database's),
 * so the restarted dev reads the task as still working and resubscribes just as it ends: the 0.3 server attaches
 * that resubscribe to the task's spent event bus and never ends it, and dev must not wait on it forever.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, REPO } from '../support/processes/cli.js';
import { DEV_START_MS, DevProcesses } from '../support/processes/a2a-dev.js';
import { startSdkV03Agent, type SdkV03Agent } from '../support/wire/a2a-sdk-v03-server.js';
import { gate } from '../fixtures/agents.js';
import { waitFor } from '../support/assert/wait-for.js';
import { A2A_URL_ENV } from './fixtures/remote-a2a-apps.js';

const devs = new DevProcesses();
const gates = [gate(), gate(), gate()];
const [ended, slow, slowSave] = gates as [
  ReturnType<typeof gate>,
  ReturnType<typeof gate>,
  ReturnType<typeof gate>,
];
const endedRemote = await startSdkV03Agent({ reply: 'reviewed once', hold: ended.promise });
const slowRemote = await startSdkV03Agent({
  reply: 'reviewed once',
  hold: slow.promise,
  holdFinalSave: slowSave.promise,
});

afterAll(async () => {
  for (const g of gates) g.open();
  await devs.stopAll();
  await Promise.all([endedRemote.close(), slowRemote.close()]);
});

interface StoredEvent {
  author: string;
  actions: { agentState?: { remoteTask?: { taskId: string } } };
}

interface Run {
  status: string;
  output: string | null;
}

/** Starts dev on `data`, runs `remote_step` against `remote` until its task id is stored, and SIGKILLs dev. */
async function runUntilKilled(
  remote: SdkV03Agent,
  data: string,
): Promise<{ id: string; taskId: string; restart: () => Promise<string> }> {
  const port = await freePort();
  const options = {
    apps: join(REPO, 'test/e2e/fixtures/remote-a2a-apps.ts'),
    data,
    env: { [A2A_URL_ENV]: remote.url },
  };
  const first = await devs.start(port, options);
  const created = await fetch(`${first.url}/v1/apps/remote_step/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId: 'u', input: 'review this' }),
  });
  const { invocationId: id } = (await created.json()) as { invocationId: string };
  // The task id is stored (the step's marker event) while the remote holds its answer.
  const taskId = await waitFor(
    async () => {
      const page = (await (await fetch(`${first.url}/v1/invocations/${id}/events`)).json()) as {
        events: StoredEvent[];
      };
      return page.events.find((e) => e.author === 'remote_reviewer')?.actions.agentState?.remoteTask?.taskId;
    },
    { timeoutMs: 60_000, what: 'the remote task id stored' },
  );
  expect(remote.tasks).toEqual([taskId]);
  expect((await first.dev.stop('SIGKILL')).signal).toBe('SIGKILL');
  return { id, taskId, restart: async () => (await devs.start(port, options)).url };
}

/** Waits for the run to complete (on the restarted dev at `url`) and returns it. */
async function completed(url: string, id: string): Promise<Run> {
  const run = async (): Promise<Run> => (await (await fetch(`${url}/v1/invocations/${id}`)).json()) as Run;
  // Within a quiet resubscribe's limit (15 s) and a read, with room for a busy machine.
  return waitFor(async () => ((await run()).status === 'completed' ? run() : undefined), {
    timeoutMs: 60_000,
    what: 'the run to complete after the restart',
  });
}

describe('agentloom dev SIGKILLed while a v0.3 remote works on its step', () => {
  it(
    'the task ended meanwhile: the restarted dev reads it and completes the run; one message at the remote',
    async () => {
      const { id, taskId, restart } = await runUntilKilled(endedRemote, 'ended');
      ended.open();
      await waitFor(async () => (await endedRemote.stateOf(taskId)) === 'completed', {
        timeoutMs: 30_000,
        what: 'the remote task to complete',
      });
      const done = await completed(await restart(), id);
      expect(done.output).toBe('reviewed once');
      expect(endedRemote.received).toEqual(['review this']);
      expect(endedRemote.cancelled).toEqual([]);
    },
    2 * DEV_START_MS + 120_000,
  );

  it(
    'the task ends as the restarted dev resubscribes: the stream that never ends is dropped, the task read, the run completed',
    async () => {
      const { id, taskId, restart } = await runUntilKilled(slowRemote, 'slow-store');
      // The remote's work ends (its events published) but its store still says working.
      slow.open();
      await waitFor(() => slowRemote.executed.includes(taskId), {
        timeoutMs: 30_000,
        what: 'the execution end',
      });
      expect(await slowRemote.stateOf(taskId)).toBe('working');
      const url = await restart();
      await waitFor(() => slowRemote.resubscribed.includes(taskId), {
        timeoutMs: 60_000,
        what: 'the restarted dev to resubscribe',
      });
      slowSave.open();
      await waitFor(async () => (await slowRemote.stateOf(taskId)) === 'completed', {
        timeoutMs: 30_000,
        what: 'the remote task stored as completed',
      });
      const done = await completed(url, id);
      expect(done.output).toBe('reviewed once');
      expect(slowRemote.received).toEqual(['review this']);
      expect(slowRemote.cancelled).toEqual([]);
    },
    2 * DEV_START_MS + 120_000,
  );
});
