/**
 * RemoteA2aAgent (the A2A client side): remote A2A agents as durable steps of a workflow. The remotes are an
 * agentloom API server on this machine serving a ScriptedModel app, and a small agent on `@a2a-js/sdk`'s own server
 * that counts the messages it received. A sequence of both completes with their answers in order (outputKey set);
 * the remote task id is stored before the remote finishes, and a step re-run after the remote accepted the message
 * follows that task instead of sending again (streaming: resubscribe; not streaming: polls); a remote failure fails
 * the node with the remote's reason; our cancel cancels the remote task.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import {
  createEngine,
  FunctionTool,
  RemoteA2aAgent,
  SequentialAgent,
  type Engine,
  type Event,
  type ScriptedTurn,
} from '../../src/index.js';
import { call, gate, scripted, seenText } from '../fixtures/agents.js';
import { startSdkAgent, type Behaviour, type SdkAgent } from '../support/wire/a2a-sdk-server.js';
import { createTestDatabase } from '../support/services/services.js';
import { crashOnce } from '../fixtures/faults.js';
import { clientEngine, eventsOf, storedTaskId } from '../support/scenarios/remote-a2a.js';
import { waitFor } from '../support/assert/wait-for.js';

let remoteEngine: Engine;
let api: ApiApp;
let apiBase: string;
const writerSaw: string[] = [];

beforeAll(async () => {
  const writer = scripted('writer', (turn: ScriptedTurn) => {
    writerSaw.push(seenText(turn));
    return 'a draft about otters';
  });
  const send = new FunctionTool({
    name: 'send_mail',
    description: 'sends a mail',
    requireConfirmation: true,
    execute: () => ({ sent: true }),
  });
  const mailer = scripted(
    'mailer',
    (turn: ScriptedTurn) => (turn.callIndex === 0 ? call('send_mail', { to: 'bob' }) : 'mail sent to bob'),
    { tools: [send] },
  );
  remoteEngine = await createEngine({
    apps: [
      { name: 'drafts', agent: writer },
      { name: 'mail', agent: mailer },
    ],
    database: await createTestDatabase(),
    queue: 'local',
    logger: pino({ level: 'silent' }),
  });
  api = await createApiServer({ engine: remoteEngine, processMetrics: false });
  apiBase = await api.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await api?.close();
  await remoteEngine?.close();
});

const sdkAgents: SdkAgent[] = [];
afterAll(async () => {
  for (const agent of sdkAgents) await agent.close();
});

async function sdkAgent(
  behave: (text: string) => Behaviour,
  options: { streaming?: boolean } = {},
): Promise<SdkAgent> {
  const agent = await startSdkAgent(behave, options);
  sdkAgents.push(agent);
  return agent;
}

describe('a sequence of remote agents', () => {
  it('runs an agentloom app and an SDK agent in order: their answers are the outputs, outputKey set', async () => {
    const reviewer = await sdkAgent((text) => ({ reply: `reviewed (${text.length} chars)` }));
    const pipeline = new SequentialAgent({
      name: 'pipeline',
      subAgents: [
        new RemoteA2aAgent({ name: 'drafter', agentCard: `${apiBase}/a2a/drafts`, outputKey: 'draft' }),
        new RemoteA2aAgent({ name: 'reviewer', agentCard: reviewer.url, outputKey: 'review' }),
      ],
    });
    const engine = await clientEngine(pipeline);
    try {
      const { invocationId, sessionId } = await engine.enqueue({
        app: 'client',
        userId: 'u',
        input: 'write about otters',
      });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      const session = await engine.getSession(sessionId);
      expect(session.state.draft).toBe('a draft about otters');
      expect(session.state.review).toMatch(/^reviewed \(\d+ chars\)$/);
      expect(result.output).toBe(session.state.review);
      const answers = session.events.filter((e) => e.content && !e.partial && e.author !== 'user');
      expect(answers.map((e) => [e.author, e.content?.parts[0]?.text])).toEqual([
        ['drafter', 'a draft about otters'],
        ['reviewer', session.state.review],
      ]);
      // The remote app's model got the user's message; the SDK agent got it and the draft, as context.
      expect(writerSaw.some((seen) => seen.includes('write about otters'))).toBe(true);
      expect(reviewer.received).toEqual([
        'write about otters\nFor context: [drafter] said: a draft about otters',
      ]);
      // The message id is the node's: the same on every attempt.
      expect(reviewer.messageIds).toEqual([`${invocationId}:pipeline/reviewer`]);
    } finally {
      await engine.close();
    }
  });
});

describe('streaming', () => {
  it("publishes the remote's status texts as partial events of the node (never stored)", async () => {
    const hold = gate();
    const remote = await sdkAgent(() => ({ reply: 'streamed answer', hold: hold.promise }));
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'streamer', agentCard: remote.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const seen: Event[] = [];
      const following = (async () => {
        for await (const event of engine.events(invocationId, { follow: true, partial: true }))
          seen.push(event);
      })();
      // Following (the user's event came), and the remote holds: what it says next is seen live.
      await waitFor(() => seen.length > 0 && remote.tasks.length > 0, {
        what: 'a follower and a remote task',
      });
      hold.open();
      await following;
      const partials = seen.filter((e) => e.partial);
      expect(partials).toContainEqual(
        expect.objectContaining({
          author: 'streamer',
          nodePath: 'streamer',
          content: { role: 'model', parts: [{ text: 'almost done' }] },
        }),
      );
      const stored = await eventsOf(engine, invocationId);
      expect(stored.some((e) => e.partial)).toBe(false);
      expect(stored.at(-1)?.content?.parts[0]?.text).toBe('streamed answer');
    } finally {
      hold.open();
      await engine.close();
    }
  });
});

describe.each([
  { streaming: true, how: 'resubscribes' },
  { streaming: false, how: 'polls' },
])('a step re-run after the remote accepted the message (streaming: $streaming)', ({ streaming, how }) => {
  it(`${how} the stored task and never sends again`, async () => {
    const hold = gate();
    const remote = await sdkAgent(() => ({ reply: 'the slow answer', hold: hold.promise }), { streaming });
    const fault = crashOnce('after-remote-task');
    const agent = new RemoteA2aAgent({ name: 'slow', agentCard: remote.url, outputKey: 'answer' });
    const engine = await clientEngine(agent, { faults: fault.hook });
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'take your time' });
      // Stored before the remote finished (it is held), and the first attempt crashed right after storing it.
      const taskId = await waitFor(() => storedTaskId(engine, invocationId, 'slow'), { what: 'task id' });
      expect(remote.tasks).toEqual([taskId]);
      await waitFor(async () => (await engine.nodes(invocationId))[0]?.attempt === 2, { what: 'the re-run' });
      expect(fault.crashed).toBe(1);
      hold.open();
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('the slow answer');
      expect((await engine.getSession(result.sessionId)).state.answer).toBe('the slow answer');
      expect(remote.received).toHaveLength(1);
      expect(remote.cancelled).toEqual([]);
    } finally {
      hold.open();
      await engine.close();
    }
  });
});

describe('a step re-run after the message left and before the task id was stored', () => {
  it('sends the same message id again: an agentloom remote answers with the same task, run once', async () => {
    const fault = crashOnce('before-remote-task');
    const agent = new RemoteA2aAgent({ name: 'drafter', agentCard: `${apiBase}/a2a/drafts` });
    const engine = await clientEngine(agent, { faults: fault.hook });
    const before = writerSaw.length;
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'otters again' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(fault.crashed).toBe(1);
      expect(result.status).toBe('completed');
      expect(result.output).toBe('a draft about otters');
      expect((await engine.nodes(invocationId))[0]?.attempt).toBe(2);
      // One remote run: its model was called once for this message.
      expect(writerSaw.slice(before).filter((seen) => seen.includes('otters again'))).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });
});

describe('remote failures and cancels', () => {
  it("fails the node with the remote's reason when the remote task fails", async () => {
    const remote = await sdkAgent(() => ({ fail: 'the otter database is on fire' }));
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'fragile', agentCard: remote.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('REMOTE_AGENT');
      expect(result.error?.message).toContain('the otter database is on fire');
      const [node] = await engine.nodes(invocationId);
      expect(node?.status).toBe('failed');
      expect(node?.error?.message).toContain('the otter database is on fire');
    } finally {
      await engine.close();
    }
  });

  it('fails the node with REMOTE_AGENT when the remote cannot be reached', async () => {
    const gone = await startSdkAgent(() => ({ reply: 'never' }));
    await gone.close();
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'absent', agentCard: gone.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('REMOTE_AGENT');
      expect(result.error?.message).toMatch(/^remote agent absent: its agent card could not be read/);
    } finally {
      await engine.close();
    }
  });

  it('fails the node with TIMEOUT after timeoutMs and cancels the remote task', async () => {
    const hold = gate();
    const remote = await sdkAgent(() => ({ reply: 'too late', hold: hold.promise }));
    const agent = new RemoteA2aAgent({ name: 'sluggish', agentCard: remote.url, timeoutMs: 300 });
    const engine = await clientEngine(agent);
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('TIMEOUT');
      expect(result.error?.message).toContain('timeoutMs (300 ms)');
      await waitFor(() => remote.cancelled.length === 1, { what: 'tasks/cancel at the remote' });
      expect(remote.cancelled).toEqual(remote.tasks);
    } finally {
      hold.open();
      await engine.close();
    }
  });

  it('cancels the remote task when our run is cancelled', async () => {
    const hold = gate();
    const remote = await sdkAgent(() => ({ reply: 'never', hold: hold.promise }));
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'patient', agentCard: remote.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const taskId = await waitFor(() => storedTaskId(engine, invocationId, 'patient'), { what: 'task id' });
      const cancelled = await engine.cancel(invocationId);
      expect(cancelled.status).toBe('cancelled');
      await waitFor(() => remote.cancelled.includes(taskId), { what: 'tasks/cancel at the remote' });
      // Sent by the step and by the cancelling engine: the remote may see it twice, for this task only.
      expect(new Set(remote.cancelled)).toEqual(new Set([taskId]));
    } finally {
      hold.open();
      await engine.close();
    }
  });
});

describe('retry after cancel or failure', () => {
  it('a run cancelled while its remote task runs, then retried, sends a new message and completes', async () => {
    const hold = gate();
    let messages = 0;
    const remote = await sdkAgent(() =>
      ++messages === 1 ? { reply: 'never', hold: hold.promise } : { reply: 'second try' },
    );
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'patient', agentCard: remote.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const taskId = await waitFor(() => storedTaskId(engine, invocationId, 'patient'), { what: 'task id' });
      expect((await engine.cancel(invocationId)).status).toBe('cancelled');
      await waitFor(() => remote.cancelled.includes(taskId), { what: 'tasks/cancel at the remote' });
      expect((await engine.retry(invocationId)).status).toBe('running');
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'completed', output: 'second try' });
      // A new message (a new id, so a new task), not the cancelled task followed again.
      expect(remote.messageIds).toHaveLength(2);
      expect(new Set(remote.messageIds).size).toBe(2);
      expect(remote.tasks[1]).not.toBe(taskId);
    } finally {
      hold.open();
      await engine.close();
    }
  });

  it('a run whose remote task failed, once retried, asks the remote again', async () => {
    let messages = 0;
    const remote = await sdkAgent(() =>
      ++messages === 1 ? { fail: 'busy, try later' } : { reply: 'done now' },
    );
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'flaky', agentCard: remote.url }));
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      expect((await engine.wait(invocationId, { timeoutMs: 30_000 })).status).toBe('failed');
      await engine.retry(invocationId);
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'completed', output: 'done now' });
      expect(remote.messageIds).toHaveLength(2);
    } finally {
      await engine.close();
    }
  });
});

describe('a remote that asks for input', () => {
  it("pauses our run with the remote's question and forwards our answer to the remote task", async () => {
    for (const streaming of [true, false]) {
      const remote = await sdkAgent(() => ({ ask: 'which colour?' }), { streaming });
      const agent = new RemoteA2aAgent({ name: 'painter', agentCard: remote.url, outputKey: 'paint' });
      const engine = await clientEngine(agent);
      try {
        const { invocationId, sessionId } = await engine.enqueue({
          app: 'client',
          userId: 'u',
          input: 'paint',
        });
        const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(paused.status).toBe('paused');
        const [pending] = paused.pending;
        expect(pending).toMatchObject({
          kind: 'long_running',
          name: 'agentloom_remote_input',
          hint: 'which colour?',
          args: { question: 'which colour?', taskId: remote.tasks[0] },
        });
        await engine.respond({
          invocationId,
          functionResponses: [{ id: pending!.callId, response: { answer: 'blue' } }],
        });
        const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(result.status).toBe('completed');
        expect(result.output).toBe('answered: blue');
        expect((await engine.getSession(sessionId)).state.paint).toBe('answered: blue');
        // One task: the question and the answer were two messages of it.
        expect(remote.received).toEqual(['paint', 'blue']);
        expect(new Set(remote.tasks)).toEqual(new Set([remote.tasks[0]]));
      } finally {
        await engine.close();
      }
    }
  });

  it("answers an agentloom remote's confirmation with a DataPart: the remote run resumes on the same task", async () => {
    const agent = new RemoteA2aAgent({ name: 'mail_relay', agentCard: `${apiBase}/a2a/mail` });
    const engine = await clientEngine(agent);
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'mail bob' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      const [pending] = paused.pending;
      // The remote's pending call, as its input-required status message carries it.
      const [asked] = (pending?.args.data ?? []) as { callId: string; tool: string }[];
      expect(asked).toMatchObject({ tool: 'send_mail' });
      const remoteTask = String(pending?.args.taskId);
      expect((await remoteEngine.get(remoteTask)).status).toBe('paused');
      await engine.respond({
        invocationId,
        functionResponses: [{ id: pending!.callId, response: { callId: asked!.callId, confirmed: true } }],
      });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('mail sent to bob');
      expect((await remoteEngine.get(remoteTask)).status).toBe('completed');
    } finally {
      await engine.close();
    }
  });
});
