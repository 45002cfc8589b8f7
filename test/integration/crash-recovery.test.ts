/**
 * Durability inside a step (ARCHITECTURE "Failure model"): a crash after a model response is stored and before
 * (or between) its tool responses. The next attempt resumes from the node's journal: no stored model call is
 * made again and each tool whose response was stored ran exactly once.
 */
import { describe, expect, it } from 'vitest';
import { createEngine, FunctionTool, SequentialAgent } from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';
import { crashOnce } from '../fixtures/faults.js';
import { backends, engineOn, pgliteDir } from '../support/services/engines.js';

function countingTools() {
  const runs = { a: 0, b: 0 };
  const a = new FunctionTool({ name: 'tool_a', description: 'a', execute: () => ({ a: ++runs.a }) });
  const b = new FunctionTool({ name: 'tool_b', description: 'b', execute: () => ({ b: ++runs.b }) });
  return { runs, tools: [a, b] };
}

function twoToolAgent(tools: FunctionTool[]) {
  return scripted(
    'worker',
    (turn) =>
      turn.callIndex === 0
        ? {
            functionCalls: [
              { name: 'tool_a', args: {} },
              { name: 'tool_b', args: {} },
            ],
          }
        : 'finished',
    { tools },
  );
}

describe.each(backends)('crash recovery on $name', (backend) => {
  for (const point of ['after-model-event', 'after-tool-event']) {
    it(`resumes after a crash at ${point} without repeating stored model or tool calls`, async () => {
      const { runs, tools } = countingTools();
      const worker = twoToolAgent(tools);
      const next = scripted('next', 'next done');
      const fault = crashOnce(point);
      const engine = await engineOn(backend, {
        apps: [{ name: 'app', agent: new SequentialAgent({ name: 'seq', subAgents: [worker, next] }) }],
        faults: fault.hook,
        // A lease that never lapses by accident and no periodic reconciler: a healthy step is never taken over
        // (which would make an extra model call on a busy machine). Recovery is the crash path itself: the step
        // rejects, the queue redelivers it, and this engine re-claims the node it no longer runs.
        leaseMs: 30_000,
        reconcileIntervalMs: 0,
      });
      try {
        const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
        const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
        expect(fault.crashed).toBe(1);
        expect(result.status).toBe('completed');
        // Exactly one re-run: the crashed attempt and the one that resumed from its journal.
        expect((await engine.nodes(invocationId)).find((n) => n.path === 'seq/worker')?.attempt).toBe(2);
        expect(result.output).toBe('next done');
        // One call for the tool round and one for the final answer: the stored response was not asked again.
        expect(worker.model.calls).toBe(2);
        expect(result.llmCalls).toBe(3);
        expect(runs).toEqual({ a: 1, b: 1 });
      } finally {
        await engine.close();
      }
    });
  }
});

describe('engine closed abruptly mid-step (PGlite on disk)', () => {
  it('a new engine on the same directory resumes the step from its journal', async () => {
    const dir = pgliteDir();
    const first = countingTools();
    const worker1 = twoToolAgent(first.tools);
    let reached!: () => void;
    const atFault = new Promise<void>((resolve) => (reached = resolve));
    const engine1 = await createEngine({
      apps: [{ name: 'app', agent: worker1 }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
      // The process "freezes" right after the model response is stored: nothing after it happens.
      faults: (point) => {
        if (point !== 'after-model-event') return;
        reached();
        return new Promise<void>(() => undefined);
      },
    });
    const { invocationId } = await engine1.enqueue({ app: 'app', userId: 'u', input: 'go' });
    await atFault;
    await engine1.close({ abrupt: true });
    expect(worker1.model.calls).toBe(1);
    expect(first.runs).toEqual({ a: 0, b: 0 });

    const second = countingTools();
    const worker2 = twoToolAgent(second.tools);
    const engine2 = await createEngine({
      apps: [{ name: 'app', agent: worker2 }],
      database: { pglite: dir },
      reconcileIntervalMs: 0,
    });
    try {
      const result = await engine2.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('finished');
      // The stored model response was reused: the new engine made only the final call.
      expect(worker2.model.calls).toBe(1);
      expect(result.llmCalls).toBe(2);
      expect(second.runs).toEqual({ a: 1, b: 1 });
    } finally {
      await engine2.close();
    }
  });
});
