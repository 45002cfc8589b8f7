/**
 * Tools declared `sideEffects: 'unsafe'` are never silently re-run after a crash between their start and their
 * stored response: the invocation pauses with an in-doubt request that a human resolves.
 */
import { describe, expect, it } from 'vitest';
import { FunctionTool } from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

describe.each(backends)('in-doubt tool calls on $name', (backend) => {
  for (const action of ['skip', 'rerun'] as const) {
    it(`pauses after a crash mid-call and, answered "${action}", completes`, async () => {
      let charges = 0;
      const charge = new FunctionTool({
        name: 'charge_card',
        description: 'charges a card',
        sideEffects: 'unsafe',
        execute: () => ({ charged: ++charges }),
      });
      const agent = scripted(
        'cashier',
        (turn) => (turn.callIndex === 0 ? { functionCalls: [{ name: 'charge_card', args: {} }] } : 'done'),
        {
          tools: [charge],
        },
      );
      let crashed = false;
      const engine = await engineOn(backend, {
        apps: [{ name: 'shop', agent }],
        // A lease that never lapses by accident and no periodic reconciler: the only re-run is the one the crash
        // causes (the queue redelivers the rejected step and this engine re-claims the node).
        leaseMs: 30_000,
        reconcileIntervalMs: 0,
        // The process dies after the charge went out but before its response was stored.
        faults: async (point) => {
          if (point === 'after-tool-start' && !crashed) {
            crashed = true;
            charges++;
            throw Object.assign(new Error('simulated crash'), { crash: true });
          }
        },
      });
      try {
        const { invocationId } = await engine.enqueue({ app: 'shop', userId: 'u', input: 'pay' });
        const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(paused.status).toBe('paused');
        expect(paused.pending[0]).toMatchObject({ kind: 'in_doubt', name: 'charge_card' });
        expect(charges).toBe(1);
        // One re-run, the crash's: no attempt was taken over by accident.
        expect((await engine.nodes(invocationId))[0]?.attempt).toBe(2);
        await expect(
          engine.respond({
            invocationId,
            functionResponses: [{ id: paused.pending[0]!.callId, response: { action: 'maybe' } }],
          }),
        ).rejects.toMatchObject({ code: 'VALIDATION' });
        const response =
          action === 'skip' ? { action, result: { charged: 1, note: 'verified by hand' } } : { action };
        await engine.respond({
          invocationId,
          functionResponses: [{ id: paused.pending[0]!.callId, response }],
          by: 'ops',
        });
        const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(done.status).toBe('completed');
        expect(charges).toBe(action === 'skip' ? 1 : 2);
        const seen = agent.model.requests[1]?.contents.flatMap((c) => c.parts).find((p) => p.functionResponse)
          ?.functionResponse?.response;
        expect(seen).toEqual(action === 'skip' ? { charged: 1, note: 'verified by hand' } : { charged: 2 });
      } finally {
        await engine.close();
      }
    });
  }
});
