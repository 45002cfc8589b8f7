/**
 * RemoteA2aAgent across a SIGKILL, in real `agentloom worker` processes on
 * PostgreSQL (BullMQ on its PostgreSQL backend): the worker running the step stores the remote task id while the
 * remote (an agent on `@a2a-js/sdk`'s own server in this process, held by the test: the 1.x server, and the 0.3.x
 * one most deployed agents still run) still works, and is killed there; another worker takes the step over, follows
 * the stored task (resubscribe) instead of sending again, and completes with the remote's answer. The remote
 * received one message. Then the same with remotes served by a second `agentloom dev` process: a sequence of two of
 * its apps, the worker killed while the second one works; the remote stored one run of each app.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Event } from '../../../src/index.js';
import { REPO } from '../../support/processes/cli.js';
import { Cluster, fileServices, nodeLease } from '../../support/processes/cluster.js';
import { startSdkAgent } from '../../support/wire/a2a-sdk-server.js';
import { startSdkV03Agent } from '../../support/wire/a2a-sdk-v03-server.js';
import { gate } from '../../fixtures/agents.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { A2A_DEV_ENV, A2A_URL_ENV } from '../fixtures/remote-a2a-apps.js';
import { GATE_ENV } from '../fixtures/a2a-dev-remotes.js';
import { DEV_START_MS, DevProcesses, invocationCount } from '../../support/processes/a2a-dev.js';
import { freePort } from '../../support/processes/cli.js';

const appsModule = join(REPO, 'test/e2e/fixtures/remote-a2a-apps.ts');
const hold = gate();
const remote = await startSdkAgent(() => ({ reply: 'reviewed once', hold: hold.promise }));
const holdV03 = gate();
const remoteV03 = await startSdkV03Agent({ reply: 'reviewed once', hold: holdV03.promise });
afterAll(async () => {
  hold.open();
  holdV03.open();
  await remote.close();
  await remoteV03.close();
});
const { options, engine, db } = await fileServices({ queue: 'postgres', appsModule, leaseMs: 2_000 });

const devs = new DevProcesses();
afterAll(() => devs.stopAll());

async function storedTaskId(invocationId: string, author?: string): Promise<string | undefined> {
  const events: Event[] = [];
  for await (const event of engine.events(invocationId)) events.push(event);
  const marker = events.find(
    (e) => e.actions.agentState?.remoteTask && (author === undefined || e.author === author),
  );
  return (marker?.actions.agentState?.remoteTask as { taskId?: string } | undefined)?.taskId;
}

describe('a worker SIGKILLed after the remote accepted the message', () => {
  const remotes = [
    { version: 'an A2A 1.0 remote (@a2a-js/sdk 1.x server)', remote, hold },
    { version: 'an A2A 0.3 remote (@a2a-js/sdk 0.3.x server)', remote: remoteV03, hold: holdV03 },
  ];
  it.each(remotes)(
    '$version: its successor follows the stored task: one message at the remote, the remote answer as output',
    async ({ remote, hold }) => {
      const cluster = new Cluster({ ...options, env: { [A2A_URL_ENV]: remote.url } });
      const [first] = await cluster.start(1);
      const { invocationId } = await engine.enqueue({
        app: 'remote_step',
        userId: 'u',
        input: 'review this',
      });
      const taskId = await waitFor(() => storedTaskId(invocationId), { timeoutMs: 30_000, what: 'task id' });
      expect(remote.tasks).toEqual([taskId]);
      const lease = await nodeLease(db, invocationId, 'remote_reviewer');
      expect(lease?.attempt).toBe(1);
      await first!.kill();
      await cluster.start(1);
      // The successor took the step over (after the lease lapsed) and follows the task the remote still works on.
      await waitFor(async () => (await nodeLease(db, invocationId, 'remote_reviewer'))?.attempt === 2, {
        timeoutMs: 30_000,
        what: 'the takeover',
      });
      hold.open();
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('reviewed once');
      expect(remote.received).toEqual(['review this']);
      expect(remote.cancelled).toEqual([]);
    },
  );
});

describe('a worker SIGKILLed while a second agentloom dev works on its remote step', () => {
  it(
    'the sequence completes with both outputs; the remote dev ran each app once',
    async () => {
      const gateFile = `${devs.dir}/review-gate`;
      const { url } = await devs.start(await freePort(), {
        apps: join(REPO, 'test/e2e/fixtures/a2a-dev-remotes.ts'),
        env: { [GATE_ENV]: gateFile },
      });
      const cluster = new Cluster({ ...options, env: { [A2A_DEV_ENV]: url } });
      const [first] = await cluster.start(1);
      const { invocationId, sessionId } = await engine.enqueue({
        app: 'remote_pipeline',
        userId: 'u',
        input: 'otters',
      });
      // The critic's task is stored while the remote dev holds its model call at the gate; then the kill.
      const taskId = await waitFor(() => storedTaskId(invocationId, 'remote_critic'), {
        timeoutMs: 60_000,
        what: 'the critic task id',
      });
      expect((await nodeLease(db, invocationId, 'remote_critic'))?.attempt).toBe(1);
      await first!.kill();
      await cluster.start(1);
      await waitFor(async () => (await nodeLease(db, invocationId, 'remote_critic'))?.attempt === 2, {
        timeoutMs: 30_000,
        what: 'the takeover',
      });
      writeFileSync(gateFile, 'open');
      const result = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('reviewed: the draft is fine');
      const { state } = await engine.getSession(sessionId);
      expect(state).toMatchObject({ draft: 'a draft of (otters)', review: 'reviewed: the draft is fine' });
      // The remote's side: one run of each app (the critic's message reached it once), the critic's is our task.
      expect(await invocationCount(url, 'drafts')).toBe(1);
      expect(await invocationCount(url, 'review')).toBe(1);
      const remoteRun = (await (await fetch(`${url}/v1/invocations/${taskId}`)).json()) as { status: string };
      expect(remoteRun.status).toBe('completed');
    },
    DEV_START_MS + 180_000,
  );
});
