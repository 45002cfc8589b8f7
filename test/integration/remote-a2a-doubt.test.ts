/**
 * RemoteA2aAgent at the crash window it cannot close alone — the message left, the process died before the remote
 * task id was stored — against a remote that is not agentloom (`@a2a-js/sdk`'s server: no idempotency by message
 * id). The default sends the same message id again (the remote starts a second task); `sideEffects: 'unsafe'`
 * pauses the run with an in-doubt call instead, answered with skip (a result) or rerun (sent again). And our cancel
 * of a run paused on a remote's question cancels the remote task, before our cancel commits (a crash in between
 * leaves our run paused, cancelled by the next cancel).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RemoteA2aAgent } from '../../src/index.js';
import { startSdkAgent, type SdkAgent } from '../support/wire/a2a-sdk-server.js';
import { crashOnce } from '../fixtures/faults.js';
import { clientEngine } from '../support/scenarios/remote-a2a.js';

const agents: SdkAgent[] = [];
afterAll(async () => {
  for (const agent of agents) await agent.close();
});

async function remote(reply: string, ask?: string): Promise<SdkAgent> {
  const agent = await startSdkAgent(() => (ask ? { ask } : { reply }));
  agents.push(agent);
  return agent;
}

describe('a crash after the send, before the task id was stored (a remote without idempotency)', () => {
  it('idempotent (the default): sends the same message id again and completes', async () => {
    const sdk = await remote('answered');
    const fault = crashOnce('before-remote-task');
    const engine = await clientEngine(new RemoteA2aAgent({ name: 'plain', agentCard: sdk.url }), {
      faults: fault.hook,
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(fault.crashed).toBe(1);
      expect(result.status).toBe('completed');
      expect(result.output).toBe('answered');
      expect(sdk.messageIds).toEqual([`${invocationId}:plain`, `${invocationId}:plain`]);
    } finally {
      await engine.close();
    }
  });

  it.each([
    { action: 'skip', sent: 1, output: 'used instead' },
    { action: 'rerun', sent: 2, output: 'answered' },
  ])(
    'unsafe: pauses in doubt, never re-sends on its own; $action → $sent message(s)',
    async ({ action, sent, output }) => {
      const sdk = await remote('answered');
      const fault = crashOnce('before-remote-task');
      const agent = new RemoteA2aAgent({
        name: 'payments',
        agentCard: sdk.url,
        sideEffects: 'unsafe',
        outputKey: 'paid',
      });
      const engine = await clientEngine(agent, { faults: fault.hook });
      try {
        const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'pay bob' });
        const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(fault.crashed).toBe(1);
        expect(paused.status).toBe('paused');
        expect(paused.pending).toHaveLength(1);
        const [call] = paused.pending;
        expect(call).toMatchObject({
          kind: 'in_doubt',
          name: 'agentloom_remote_send',
          args: { agent: 'payments', messageId: `${invocationId}:payments` },
        });
        expect(sdk.received).toEqual(['pay bob']);
        await expect(
          engine.respond({
            invocationId,
            functionResponses: [{ id: call!.callId, response: { action: 'maybe' } }],
          }),
        ).rejects.toMatchObject({ code: 'VALIDATION' });
        const answer = action === 'skip' ? { action, result: { text: 'used instead' } } : { action };
        await engine.respond({ invocationId, functionResponses: [{ id: call!.callId, response: answer }] });
        const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(result.status).toBe('completed');
        expect(result.output).toBe(output);
        expect((await engine.getSession(result.sessionId)).state.paid).toBe(output);
        expect(sdk.received).toHaveLength(sent);
      } finally {
        await engine.close();
      }
    },
  );

  it('unsafe: a fail answer fails the node with REMOTE_AGENT', async () => {
    const sdk = await remote('answered');
    const fault = crashOnce('before-remote-task');
    const agent = new RemoteA2aAgent({ name: 'payments', agentCard: sdk.url, sideEffects: 'unsafe' });
    const engine = await clientEngine(agent, { faults: fault.hook });
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'pay ann' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      const callId = paused.pending[0]?.callId as string;
      await engine.respond({
        invocationId,
        functionResponses: [{ id: callId, response: { action: 'fail', message: 'the bank says no' } }],
      });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'REMOTE_AGENT' });
      expect(result.error?.message).toContain('the bank says no');
      expect(sdk.received).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });
});

describe('an in-doubt remote send withdrawn by a cancel', () => {
  it('is asked again under a new id when the run is retried, and answered there', async () => {
    const sdk = await remote('answered');
    const fault = crashOnce('before-remote-task');
    const agent = new RemoteA2aAgent({ name: 'payments', agentCard: sdk.url, sideEffects: 'unsafe' });
    const engine = await clientEngine(agent, { faults: fault.hook });
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'pay cy' });
      const first = (await engine.wait(invocationId, { timeoutMs: 30_000 })).pending[0]?.callId as string;
      expect((await engine.cancel(invocationId)).status).toBe('cancelled');
      await engine.retry(invocationId);
      const again = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(again.status).toBe('paused');
      expect(again.pending).toMatchObject([
        { kind: 'in_doubt', callId: `${first}~2`, originalCallId: first },
      ]);
      await engine.respond({
        invocationId,
        functionResponses: [
          { id: `${first}~2`, response: { action: 'skip', result: { text: 'paid by hand' } } },
        ],
      });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'completed', output: 'paid by hand' });
      expect(sdk.received).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });
});

describe('our run cancelled while paused on a remote task', () => {
  it('cancels the remote task (tasks/cancel), before our cancel commits', async () => {
    const sdk = await remote('', 'which colour?');
    const fault = crashOnce('before-cancel-commit');
    const agent = new RemoteA2aAgent({ name: 'painter', agentCard: sdk.url });
    const engine = await clientEngine(agent, { faults: fault.hook });
    try {
      const { invocationId } = await engine.enqueue({ app: 'client', userId: 'u', input: 'paint' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      const taskId = String(paused.pending[0]?.args.taskId);
      expect(sdk.tasks).toEqual([taskId]);
      // A crash between the remote's cancel and ours: the remote task is stopped, our run still paused.
      await expect(engine.cancel(invocationId)).rejects.toThrow('simulated crash at before-cancel-commit');
      expect(sdk.cancelled).toEqual([taskId]);
      expect((await engine.get(invocationId)).status).toBe('paused');
      // Cancelled again: the remote's refusal (its task already ended) does not hold our cancel back.
      expect((await engine.cancel(invocationId)).status).toBe('cancelled');
      expect(sdk.cancelled).toEqual([taskId]);
      expect(sdk.received).toEqual(['paint']);
    } finally {
      await engine.close();
    }
  });
});
