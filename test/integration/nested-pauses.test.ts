/**
 * Pauses below an LlmAgent (AgentTool child, transfer target) surface to the user and resume in place; a changed
 * definition is refused; the Runner façade streams a run.
 */
import { describe, expect, it } from 'vitest';
import {
  AgentTool,
  createEngine,
  FunctionTool,
  Runner,
  SequentialAgent,
  type Event,
} from '../../src/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn, pgliteDir } from '../support/services/engines.js';

function deleteTool(runs: { count: number }) {
  return new FunctionTool({
    name: 'delete_records',
    description: 'deletes records',
    execute: (_args, ctx) => {
      if (!ctx.toolConfirmation) {
        ctx.requestConfirmation({ hint: 'This deletes customer data', payload: { scope: 'all' } });
        return { status: 'awaiting approval' };
      }
      runs.count++;
      return { deleted: 42, scope: (ctx.toolConfirmation.payload as { scope?: string } | undefined)?.scope };
    },
  });
}

describe.each(backends)('nested pauses on $name', (backend) => {
  it('surfaces a confirmation requested inside an AgentTool child and resumes the parent after it', async () => {
    const runs = { count: 0 };
    const cleaner = scripted(
      'cleaner',
      (turn) => (turn.callIndex === 0 ? call('delete_records') : 'cleaned 42'),
      {
        tools: [deleteTool(runs)],
      },
    );
    const boss = scripted(
      'boss',
      (turn) => (turn.callIndex === 0 ? call('cleaner', { request: 'clean up' }) : 'all clean'),
      {
        tools: [new AgentTool({ agent: cleaner })],
      },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'ops', agent: boss }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'ops', userId: 'u', input: 'clean' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      expect(paused.pending).toHaveLength(1);
      expect(paused.pending[0]).toMatchObject({
        kind: 'confirmation',
        name: 'delete_records',
        hint: 'This deletes customer data',
        payload: { scope: 'all' },
      });
      expect(paused.pending[0]!.nodePath).toMatch(/^boss\/cleaner@/);
      expect(runs.count).toBe(0);
      await engine.confirm(paused.pending[0]!.callId, { confirmed: true, payload: { scope: 'inactive' } });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('all clean');
      expect(runs.count).toBe(1);
      expect(boss.model.calls).toBe(2);
      expect(cleaner.model.calls).toBe(2);
      const events: Event[] = [];
      for await (const e of engine.events(invocationId)) events.push(e);
      const result = events
        .flatMap((e) => e.content?.parts ?? [])
        .find((p) => p.functionResponse?.name === 'delete_records' && p.functionResponse.response.deleted);
      expect(result?.functionResponse?.response).toEqual({ deleted: 42, scope: 'inactive' });
    } finally {
      await engine.close();
    }
  });

  it('keeps a transferring node paused (never finished) while its target is paused', async () => {
    const runs = { count: 0 };
    const admin = scripted(
      'admin',
      (turn) => (turn.callIndex === 0 ? call('delete_records') : 'admin done'),
      { tools: [deleteTool(runs)] },
    );
    const front = scripted('front', call('transfer_to_agent', { agent_name: 'admin' }), {
      subAgents: [admin],
    });
    const after = scripted('after', 'after done');
    const engine = await engineOn(backend, {
      apps: [{ name: 'desk', agent: new SequentialAgent({ name: 'seq', subAgents: [front, after] }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'desk', userId: 'u', input: 'delete' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      const nodes = await engine.nodes(invocationId);
      expect(nodes.find((n) => n.path === 'seq/front')?.status).toBe('paused');
      expect(nodes.find((n) => n.path === 'seq/front/admin')?.status).toBe('paused');
      expect(after.model.calls).toBe(0);
      await engine.confirm(paused.pending[0]!.callId, { confirmed: true });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('after done');
      expect(front.model.calls).toBe(1);
      expect(runs.count).toBe(1);
    } finally {
      await engine.close();
    }
  });
});

describe('definition drift', () => {
  it('refuses to resume an invocation on a changed agent tree', async () => {
    const dir = pgliteDir();
    const runs = { count: 0 };
    const v1 = scripted('worker', call('delete_records'), { tools: [deleteTool(runs)] });
    const engine1 = await createEngine({
      apps: [{ name: 'app', agent: v1 }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
    });
    const { invocationId } = await engine1.enqueue({ app: 'app', userId: 'u', input: 'x' });
    const paused = await engine1.wait(invocationId, { timeoutMs: 30_000 });
    await engine1.close();
    const v2 = new SequentialAgent({ name: 'worker_v2', subAgents: [scripted('worker', 'changed')] });
    const engine2 = await createEngine({
      apps: [{ name: 'app', agent: v2 }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
    });
    try {
      await expect(engine2.confirm(paused.pending[0]!.callId, { confirmed: true })).rejects.toMatchObject({
        code: 'DEFINITION_MISMATCH',
      });
      // Nothing was stored: the call is still pending.
      expect((await engine2.get(invocationId)).pending).toHaveLength(1);
    } finally {
      await engine2.close();
    }
  });
});

describe('Runner', () => {
  it('runs an app in process and yields its events until it completes', async () => {
    const runner = await Runner.create({ appName: 'hello', agent: scripted('greeter', 'hello, ann') });
    try {
      const events: Event[] = [];
      for await (const event of runner.run({ userId: 'ann', newMessage: 'hi' })) events.push(event);
      expect(events.map((e) => e.author)).toEqual(['user', 'greeter']);
      expect(events[1]?.content?.parts[0]?.text).toBe('hello, ann');
    } finally {
      await runner.close();
    }
  });
});
