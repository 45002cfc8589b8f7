/**
 * A zombie never sends (ARCHITECTURE "Zombie worker"): a worker frozen between preparing a model or tool
 * call and sending it — after its lease check, inside the awaits of the history read, the callbacks and the budget —
 * while another worker took the node over and finished it, must not send on waking. The lease check is the last
 * thing before the request leaves: on waking, this process's clock says the lease may have lapsed, so it renews
 * first, is refused (FENCED) and stops. Each engine's scripted model and tool count what reached them.
 *
 * Two engines on one PostgreSQL database, each with its own pool and queue, stand for two worker processes. The
 * freeze is the fault point `before-model-send` / `before-tool-send` holding the zombie's step while its clock
 * jumps past its lease (as a SIGSTOP does), with leases too long for any renewal timer to run meanwhile.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine, type Engine } from '../../src/index.js';
import { getNode } from '../../src/store/repos/nodes.js';
import { gate, noteTwins } from '../fixtures/agents.js';
import { lapseLease } from '../fixtures/faults.js';
import { recordingLogger } from '../support/assert/log-records.js';
import { createTestDatabase } from '../support/services/services.js';

const LEASE_MS = 300_000;

afterEach(() => {
  vi.useRealTimers();
});

describe('a worker frozen between preparing a call and sending it', () => {
  it.each([
    { point: 'before-model-send', what: 'model call' },
    { point: 'before-tool-send', what: 'tool call' },
  ])('sends no $what after another worker took the node over ($point)', async ({ point }) => {
    const url = await createTestDatabase();
    const { toolRuns, agentA, agentB } = noteTwins();
    const frozen = gate();
    const wake = gate();
    const logsA: Record<string, unknown>[] = [];
    const common = { queue: 'local' as const, reconcileIntervalMs: 0, database: url, leaseMs: LEASE_MS };
    const engines: Engine[] = [];
    try {
      const engineA = await createEngine({
        ...common,
        apps: [{ name: 'app', agent: agentA }],
        logger: recordingLogger(logsA),
        faults: async (at, info) => {
          if (at !== point || info.attempt !== 1) return;
          frozen.open();
          await wake.promise;
        },
      });
      engines.push(engineA);
      const engineB = await createEngine({
        ...common,
        apps: [{ name: 'app', agent: agentB }],
        logger: pino({ level: 'error' }),
      });
      engines.push(engineB);

      const { invocationId } = await engineA.enqueue({ app: 'app', userId: 'u', input: 'go' });
      await frozen.promise;
      const modelCallsBeforeFreeze = agentA.model.calls;
      // The zombie's lease lapses in the database, and B's reconciler takes the node over and finishes the run.
      const db = engineB.store.db;
      await lapseLease(db, invocationId, 'solo', 1);
      expect(await engineB.reconcile({ staleMs: 0 })).toBe(1);
      expect(await engineB.wait(invocationId, { timeoutMs: 30_000 })).toMatchObject({
        status: 'completed',
        output: 'done',
      });
      const done = await getNode(db, invocationId, 'solo');
      expect(done).toMatchObject({ status: 'completed', attempt: 2 });

      // The zombie wakes: its clock has moved past its lease (no timer ran while it was stopped).
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + LEASE_MS);
      wake.open();
      await engineA.close();
      engines.shift();

      // It sent nothing: no model call and no tool run after the freeze; it learned it was superseded.
      expect(agentA.model.calls).toBe(modelCallsBeforeFreeze);
      expect(toolRuns.a).toBe(0);
      expect(logsA).toContainEqual(
        expect.objectContaining({ err: expect.objectContaining({ code: 'FENCED' }), attempt: 1 }),
      );
      // One model call per model turn across the takeover, and the tool ran once (by B).
      expect(agentA.model.calls + agentB.model.calls).toBe(2);
      expect(toolRuns.b).toBe(1);
      expect(await getNode(db, invocationId, 'solo')).toEqual(done);
    } finally {
      wake.open();
      vi.useRealTimers();
      for (const engine of engines) await engine.close();
    }
  });
});
