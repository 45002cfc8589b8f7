/**
 * The fencing token (ARCHITECTURE "Executing a step", "Zombie worker"): a worker presumed dead — its lease expired
 * and another worker claimed the node — can no longer write: its appends, artifact saves, lease renewals and its
 * final commit are refused and change nothing.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EngineNodeRuntime } from '../../src/engine/step/runtime/node-runtime.js';
import { createEngine } from '../../src/index.js';
import { claimLeafTx, getNode, renewLease } from '../../src/store/repos/nodes.js';
import { getInvocation } from '../../src/store/repos/invocations.js';
import { loadArtifact } from '../../src/store/repos/tool-requests.js';
import { gate, noteTwins, scripted } from '../fixtures/agents.js';
import { lapseLease } from '../fixtures/faults.js';
import { recordingLogger } from '../support/assert/log-records.js';
import { backends, engineOn } from '../support/services/engines.js';
import { createTestDatabase } from '../support/services/services.js';

describe.each(backends)('fencing on $name', (backend) => {
  it('rejects appends, artifact saves and lease renewals of a superseded attempt, and accepts the successor', async () => {
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: scripted('solo', 'x') }],
      worker: false,
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const db = engine.store.db;
      // Worker A claims with a lease that has already run out (it is "presumed dead"); worker B takes over.
      const stale = await claimLeafTx(db, invocationId, 'solo', 'worker-a', -1_000);
      expect(stale?.attempt).toBe(1);
      const live = await claimLeafTx(db, invocationId, 'solo', 'worker-b', 60_000);
      expect(live?.attempt).toBe(2);
      // A third claim finds a live lease and gets nothing.
      expect(await claimLeafTx(db, invocationId, 'solo', 'worker-c', 60_000)).toBeUndefined();
      expect(await renewLease(db, invocationId, 'solo', 1, 60_000)).toBe(false);

      const inv = (await getInvocation(db, invocationId))!;
      const deps = {
        store: engine.store,
        models: new Map(),
        defaultModel: () => undefined,
        tools: new Map(),
        fault: async () => undefined,
        partials: () => undefined,
      };
      const runtime = (row: NonNullable<typeof stale>) =>
        new EngineNodeRuntime(deps, inv, row, [], {}, new AbortController().signal);
      const event = { author: 'solo', content: { role: 'model' as const, parts: [{ text: 'from A' }] } };
      await expect(runtime(stale!).emit(event)).rejects.toMatchObject({ code: 'FENCED' });
      // The same with a state change (the multi-statement path): refused, and the state is untouched.
      await expect(
        runtime(stale!).emit({ ...event, actions: { stateDelta: { from_a: true }, artifactDelta: {} } }),
      ).rejects.toMatchObject({ code: 'FENCED' });
      const stored = await runtime(live!).emit({
        ...event,
        content: { role: 'model', parts: [{ text: 'from B' }] },
      });
      expect(stored.nodePath).toBe('solo');
      // An artifact save (a tool's ctx.saveArtifact) is fenced the same way.
      const note = { mime: 'text/plain', data: new TextEncoder().encode('from A') };
      await expect(runtime(stale!).saveArtifact('note', note)).rejects.toMatchObject({ code: 'FENCED' });
      expect(await loadArtifact(db, inv.sessionId, 'note')).toBeUndefined();
      expect(
        await runtime(live!).saveArtifact('note', { ...note, data: new TextEncoder().encode('from B') }),
      ).toBe(1);
      const texts = (await engine.getSession(inv.sessionId)).events.map((e) => e.content?.parts[0]?.text);
      expect(texts).toEqual(['go', 'from B']);
      expect((await engine.getSession(inv.sessionId)).state).toEqual({});
      expect((await getNode(db, invocationId, 'solo'))?.leaseOwner).toBe('worker-b');
    } finally {
      await engine.close();
    }
  });
});

// Two engines on one database, each with its own pool and queue: the zombie (A) and its successor (B) are two
// processes as far as PostgreSQL can tell. PGlite is one process's database, so this setting does not exist there.
describe('fencing across two engines on one PostgreSQL database', () => {
  it("refuses a zombie's commit and lease renewal while its successor runs, and the history has no duplicate", async () => {
    const url = await createTestDatabase();
    const { toolRuns, agentA, agentB } = noteTwins();
    const aPaused = gate();
    const aResume = gate();
    const bPaused = gate();
    const bResume = gate();
    const logsA: Record<string, unknown>[] = [];
    const common = { queue: 'local' as const, reconcileIntervalMs: 0, database: url };
    // Leases so long that no renewal timer (every leaseMs / 3) runs during the test: A stands for a process frozen
    // past its lease (SIGSTOP, a long GC), whose lease the test ends explicitly below, and B's row must not move.
    const engineA = await createEngine({
      ...common,
      apps: [{ name: 'app', agent: agentA }],
      leaseMs: 300_000,
      logger: recordingLogger(logsA),
      faults: async (point, info) => {
        if (point !== 'after-model-event' || info.attempt !== 1) return;
        aPaused.open();
        await aResume.promise;
        // What the zombie does on waking: end its step as failed. Committed, that would fail the node and the
        // invocation under its successor.
        throw new Error('zombie: failed after waking up');
      },
    });
    const engineB = await createEngine({
      ...common,
      apps: [{ name: 'app', agent: agentB }],
      leaseMs: 300_000,
      logger: pino({ level: 'error' }),
      faults: async (point, info) => {
        if (point !== 'after-tool-event' || info.attempt !== 2) return;
        bPaused.open();
        await bResume.promise;
      },
    });
    try {
      const { invocationId, sessionId } = await engineA.enqueue({ app: 'app', userId: 'u', input: 'go' });
      await aPaused.promise;
      const db = engineB.store.db;
      const underA = await getNode(db, invocationId, 'solo');
      expect(underA).toMatchObject({ status: 'running', attempt: 1 });
      // A holds a live lease: B cannot take the node over.
      expect(await engineB.reconcile({ staleMs: 0 })).toBe(0);
      // A's lease lapses (only attempt 1's: never B's), and B's reconciler takes over: attempt 2.
      await lapseLease(db, invocationId, 'solo', 1);
      expect(await engineB.reconcile({ staleMs: 0 })).toBe(1);
      await bPaused.promise;
      const underB = await getNode(db, invocationId, 'solo');
      expect(underB).toMatchObject({ status: 'running', attempt: 2 });
      expect(underB?.leaseOwner).not.toBe(underA?.leaseOwner);
      const eventsUnderB = (await engineB.getSession(sessionId)).events.map((e) => e.id);

      // The zombie's lease renewal is refused and leaves B's lease as it was.
      expect(await renewLease(engineA.store.db, invocationId, 'solo', 1, 300_000)).toBe(false);
      // The zombie wakes and commits its failure; close() waits for its step to end.
      aResume.open();
      await engineA.close();
      expect(logsA).toContainEqual(
        expect.objectContaining({ msg: 'step commit refused: superseded', attempt: 1, status: 'failed' }),
      );
      // Refused: the node is still B's running attempt, the invocation still runs, no event was added.
      expect(await getNode(db, invocationId, 'solo')).toEqual(underB);
      expect((await getInvocation(db, invocationId))?.status).toBe('running');
      expect((await engineB.getSession(sessionId)).events.map((e) => e.id)).toEqual(eventsUnderB);

      bResume.open();
      const result = await engineB.wait(invocationId, { timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'completed', output: 'done' });
      expect(await getNode(db, invocationId, 'solo')).toMatchObject({
        status: 'completed',
        attempt: 2,
        error: null,
      });
      // One model call per step across the takeover: A's stored call was reused by B, the tool ran once (by B).
      expect(agentA.model.calls).toBe(1);
      expect(agentB.model.calls).toBe(1);
      expect(toolRuns).toEqual({ a: 0, b: 1 });
      const parts = (await engineB.getSession(sessionId)).events.flatMap((e) => e.content?.parts ?? []);
      expect(parts.filter((p) => p.functionCall)).toHaveLength(1);
      expect(parts.filter((p) => p.functionResponse)).toHaveLength(1);
      expect(parts.filter((p) => p.text === 'done')).toHaveLength(1);
    } finally {
      aResume.open();
      bResume.open();
      await engineA.close();
      await engineB.close();
    }
  });
});
