/**
 * Human in the loop (SEMANTICS §5): confirmations, rejections, long-running tools, parallel pauses answered one at
 * a time, and a paused run that survives closing the engine.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  createEngine,
  FunctionTool,
  LoopAgent,
  ParallelAgent,
  SequentialAgent,
  exitLoop,
  type Event,
} from '../../src/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn, pgliteDir } from '../support/services/engines.js';

function transferTool(runs: { count: number }) {
  return new FunctionTool({
    name: 'transfer_money',
    description: 'moves money',
    parameters: z.object({ amount: z.number() }),
    requireConfirmation: (args) => args.amount > 100,
    execute: ({ amount }, ctx) => {
      runs.count++;
      return { moved: amount, confirmedPayload: ctx.toolConfirmation?.payload ?? null };
    },
  });
}

describe.each(backends)('pause and resume on $name', (backend) => {
  it('pauses for confirmation, runs the tool exactly once after approval, and completes', async () => {
    const runs = { count: 0 };
    const agent = scripted(
      'banker',
      (turn) => (turn.callIndex === 0 ? call('transfer_money', { amount: 500 }) : 'transfer done'),
      {
        tools: [transferTool(runs)],
      },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'bank', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'bank', userId: 'u', input: 'send 500' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      expect(paused.pending).toHaveLength(1);
      const pending = paused.pending[0]!;
      expect(pending).toMatchObject({
        kind: 'confirmation',
        name: 'transfer_money',
        args: { amount: 500 },
        nodePath: 'banker',
      });
      expect(pending.callId).not.toBe(pending.originalCallId);
      expect(runs.count).toBe(0);
      const events: Event[] = [];
      for await (const e of engine.events(invocationId)) events.push(e);
      const request = events.find((e) =>
        e.content?.parts.some((p) => p.functionCall?.name === 'adk_request_confirmation'),
      );
      expect(request?.longRunningToolIds).toEqual([pending.callId]);
      expect(request?.content?.parts[0]?.functionCall?.args).toMatchObject({
        originalFunctionCall: { id: pending.originalCallId, name: 'transfer_money', args: { amount: 500 } },
        toolConfirmation: { confirmed: false },
      });

      await engine.confirm(pending.callId, { confirmed: true, payload: { note: 'ok by ann' }, by: 'ann' });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('transfer done');
      expect(runs.count).toBe(1);
      expect(agent.model.calls).toBe(2);
      const all: Event[] = [];
      for await (const e of engine.events(invocationId)) all.push(e);
      const response = all
        .flatMap((e) => e.content?.parts ?? [])
        .filter((p) => p.functionResponse?.name === 'transfer_money')
        .at(-1);
      expect(response?.functionResponse?.response).toEqual({
        moved: 500,
        confirmedPayload: { note: 'ok by ann' },
      });
      // The same answer again is a no-op; a different one is a conflict.
      await engine.confirm(pending.callId, { confirmed: true, payload: { note: 'ok by ann' } });
      await expect(engine.confirm(pending.callId, { confirmed: false })).rejects.toMatchObject({
        code: 'CONFLICT',
      });
      await expect(engine.confirm('no-such-call', { confirmed: true })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
    } finally {
      await engine.close();
    }
  });

  it('answers a rejection with the rejected response and never runs the tool', async () => {
    const runs = { count: 0 };
    const agent = scripted(
      'banker',
      (turn) => (turn.callIndex === 0 ? call('transfer_money', { amount: 900 }) : 'ok, not sent'),
      {
        tools: [transferTool(runs)],
      },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'bank', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'bank', userId: 'u', input: 'send 900' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      await engine.confirm(paused.pending[0]!.callId, { confirmed: false });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(runs.count).toBe(0);
      const lastTurn = agent.model.requests[1]!.contents.flatMap((c) => c.parts).filter(
        (p) => p.functionResponse,
      );
      expect(lastTurn.at(-1)?.functionResponse?.response).toEqual({ error: 'This tool call is rejected.' });
    } finally {
      await engine.close();
    }
  });

  it('pauses on a long-running tool until its final response arrives', async () => {
    let started = 0;
    const ticket = new FunctionTool({
      name: 'open_ticket',
      description: 'opens a ticket handled by a human',
      isLongRunning: true,
      execute: () => ({ status: 'pending', ticket: ++started }),
    });
    const agent = scripted(
      'desk',
      (turn) =>
        turn.callIndex === 0
          ? call('open_ticket')
          : `ticket says ${JSON.stringify(turn.contents.at(-1)?.parts[0]?.functionResponse?.response)}`,
      {
        tools: [ticket],
      },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'desk', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'desk', userId: 'u', input: 'help' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      expect(paused.pending[0]).toMatchObject({ kind: 'long_running', name: 'open_ticket' });
      expect(paused.pending[0]!.callId).toBe(paused.pending[0]!.originalCallId);
      await engine.respond({
        invocationId,
        functionResponses: [
          { id: paused.pending[0]!.callId, name: 'open_ticket', response: { status: 'resolved' } },
        ],
      });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('ticket says {"status":"resolved"}');
      expect(started).toBe(1);
    } finally {
      await engine.close();
    }
  });

  it('pauses two parallel branches and completes after both are answered one at a time', async () => {
    const runs = { count: 0 };
    const tool = transferTool(runs);
    const branch = (name: string, amount: number) =>
      scripted(name, (turn) => (turn.callIndex === 0 ? call('transfer_money', { amount }) : `${name} done`), {
        tools: [tool],
      });
    const after = scripted('after', 'all done');
    const root = new SequentialAgent({
      name: 'root',
      subAgents: [
        new ParallelAgent({ name: 'fan', subAgents: [branch('left', 200), branch('right', 300)] }),
        after,
      ],
    });
    const engine = await engineOn(backend, { apps: [{ name: 'par', agent: root }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'par', userId: 'u', input: 'go' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      expect(paused.pending.map((p) => p.branch).sort()).toEqual(['fan.0', 'fan.1']);
      const left = paused.pending.find((p) => p.branch === 'fan.0')!;
      const right = paused.pending.find((p) => p.branch === 'fan.1')!;
      await engine.confirm(left.callId, { confirmed: true });
      const still = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(still.status).toBe('paused');
      expect(still.pending.map((p) => p.callId)).toEqual([right.callId]);
      expect(runs.count).toBe(1);
      expect(after.model.calls).toBe(0);
      await engine.confirm(right.callId, { confirmed: true });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('all done');
      expect(runs.count).toBe(2);
    } finally {
      await engine.close();
    }
  });
});

describe('a paused run on PGlite', () => {
  it('survives closing the engine; a new engine on the same directory completes it', async () => {
    const dir = pgliteDir();
    const runs = { count: 0 };
    const build = () => {
      const drafter = scripted(
        'drafter',
        (turn) => (turn.callIndex === 0 ? call('transfer_money', { amount: 150 }) : 'draft'),
        {
          tools: [transferTool(runs)],
          outputKey: 'draft',
        },
      );
      const critic = scripted('critic', call('exit_loop'), { tools: [exitLoop] });
      return {
        drafter,
        critic,
        root: new LoopAgent({ name: 'loop', maxIterations: 3, subAgents: [drafter, critic] }),
      };
    };
    const first = build();
    const engine1 = await createEngine({
      apps: [{ name: 'w', agent: first.root }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
    });
    const { invocationId } = await engine1.enqueue({ app: 'w', userId: 'u', input: 'go' });
    const paused = await engine1.wait(invocationId, { timeoutMs: 30_000 });
    expect(paused.status).toBe('paused');
    await engine1.close();

    const second = build();
    const engine2 = await createEngine({
      apps: [{ name: 'w', agent: second.root }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
    });
    try {
      expect((await engine2.get(invocationId)).status).toBe('paused');
      await engine2.confirm(paused.pending[0]!.callId, { confirmed: true });
      const done = await engine2.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(runs.count).toBe(1);
      // The first model call was made by the first engine; the second only continued after the tool.
      expect(first.drafter.model.calls).toBe(1);
      expect(second.drafter.model.calls).toBe(1);
      expect(second.critic.model.calls).toBe(1);
    } finally {
      await engine2.close();
    }
  });
});
