/**
 * The fencing token (ARCHITECTURE "Executing a step"): a worker presumed dead — its lease expired and another
 * worker claimed the node — can no longer write: its appends fail with FENCED and store nothing.
 */
import { describe, expect, it } from 'vitest';
import { EngineNodeRuntime } from '../../src/engine/node-runtime.js';
import { claimLeafTx, getNode, renewLease } from '../../src/store/nodes.js';
import { getInvocation } from '../../src/store/invocations.js';
import { scripted } from '../support/agents.js';
import { backends, engineOn } from '../support/engines.js';

describe.each(backends)('fencing on $name', (backend) => {
  it('rejects writes of a superseded attempt and accepts the successor', async () => {
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
      const texts = (await engine.getSession(inv.sessionId)).events.map((e) => e.content?.parts[0]?.text);
      expect(texts).toEqual(['go', 'from B']);
      expect((await engine.getSession(inv.sessionId)).state).toEqual({});
      expect((await getNode(db, invocationId, 'solo'))?.leaseOwner).toBe('worker-b');
    } finally {
      await engine.close();
    }
  });
});
