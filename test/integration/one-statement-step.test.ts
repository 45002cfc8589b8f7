/**
 * The one-statement completion of a sequence step (store/step/leaf-completion.ts `completeAndAdvance`): the leaf settles and the
 * parent advances together, or nothing is written — when another attempt superseded the leaf (the fence), or when
 * the parent is no longer at the checkpoint the decision was computed from. On PostgreSQL, with real rows.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getInvocation } from '../../src/store/repos/invocations.js';
import { nodesAt, updateNodeTx } from '../../src/store/repos/nodes.js';
import { completeAndAdvance } from '../../src/store/step/leaf-completion.js';
import { Store } from '../../src/store/store.js';
import { seedRun, sequenceAdvance } from '../fixtures/seed-run.js';
import { createTestDatabase } from '../support/services/services.js';

describe('completing a leaf and advancing its parent in one statement', () => {
  let store: Store;
  afterAll(async () => store?.close());

  /** An invocation with a running sequence `seq` (checkpoint 0) and its running leaf `seq/a` (attempt 1). */
  async function setUp(id: string) {
    store ??= await Store.open(await createTestDatabase());
    return seedRun(store, {
      id,
      app: 'steps',
      nodes: [
        {
          path: 'seq',
          agent: 'seq',
          kind: 'sequential',
          set: { status: 'running', checkpoint: { completedSubAgents: 0 } },
        },
        {
          path: 'seq/a',
          agent: 'a',
          kind: 'custom',
          set: { status: 'running', attempt: 1, leaseOwner: 'w1' },
        },
      ],
    });
  }

  const step = (id: string, sessionId: string, attempt: number, expected: Record<string, unknown>) =>
    completeAndAdvance(store.db, {
      leaf: {
        path: 'seq/a',
        attempt,
        fields: { status: 'completed', escalated: false, output: 'A', error: null },
      },
      expectedCheckpoint: expected,
      advance: sequenceAdvance(id, sessionId, 'b', [
        {
          id: `evt_${id}`,
          nodePath: 'seq',
          author: 'seq',
          branch: null,
          content: null,
          actions: { stateDelta: {}, artifactDelta: {}, agentState: { completedSubAgents: 1 } },
          longRunningToolIds: null,
          errorCode: null,
          errorMessage: null,
        },
      ]),
    });

  async function snapshot(id: string, sessionId: string) {
    const nodes = await nodesAt(store.db, id, ['seq', 'seq/a', 'seq/b']);
    const byPath = Object.fromEntries(
      nodes.map((n) => [n.path, { status: n.status, checkpoint: n.checkpoint, attempt: n.attempt }]),
    );
    return { nodes: byPath, events: (await store.listEvents(sessionId)).length };
  }

  it('writes everything when the attempt owns the leaf and the parent is where the decision started', async () => {
    const sessionId = await setUp('inv_done');
    const result = await step('inv_done', sessionId, 1, { completedSubAgents: 0 });
    expect(result.outcome).toBe('done');
    if (result.outcome !== 'done') return;
    // The next leaf is created claimed by this worker, and the state it sees is returned with it.
    expect(result.advance.claimed?.nodes).toHaveLength(1);
    expect(result.advance.claimed?.nodes[0]).toMatchObject({
      path: 'seq/b',
      status: 'running',
      attempt: 1,
      leaseOwner: 'w1',
    });
    expect(result.advance.events).toHaveLength(1);
    expect(await snapshot('inv_done', sessionId)).toEqual({
      nodes: {
        seq: { status: 'running', checkpoint: { completedSubAgents: 1 }, attempt: 0 },
        'seq/a': { status: 'completed', checkpoint: {}, attempt: 1 },
        'seq/b': { status: 'running', checkpoint: {}, attempt: 1 },
      },
      events: 1,
    });
  });

  it('writes nothing when another attempt superseded the leaf', async () => {
    const sessionId = await setUp('inv_fenced');
    const before = await snapshot('inv_fenced', sessionId);
    expect(await step('inv_fenced', sessionId, 2, { completedSubAgents: 0 })).toEqual({ outcome: 'fenced' });
    expect(await snapshot('inv_fenced', sessionId)).toEqual(before);
  });

  it('writes nothing when the parent moved on since the decision was computed', async () => {
    const sessionId = await setUp('inv_stale');
    await updateNodeTx(store.db, 'inv_stale', 'seq', { checkpoint: { completedSubAgents: 0, moved: true } });
    const before = await snapshot('inv_stale', sessionId);
    expect(await step('inv_stale', sessionId, 1, { completedSubAgents: 0 })).toEqual({ outcome: 'stale' });
    expect(await snapshot('inv_stale', sessionId)).toEqual(before);
    expect(before.nodes['seq/a']?.status).toBe('running');
  });

  it('writes nothing when the parent ended (cancelled) meanwhile', async () => {
    const sessionId = await setUp('inv_cancelled');
    await updateNodeTx(store.db, 'inv_cancelled', 'seq', { status: 'cancelled' });
    const before = await snapshot('inv_cancelled', sessionId);
    expect(await step('inv_cancelled', sessionId, 1, { completedSubAgents: 0 })).toEqual({
      outcome: 'stale',
    });
    expect(await snapshot('inv_cancelled', sessionId)).toEqual(before);
  });

  /** The root sequence's last step by `attempt`: the root completes and, with it, the invocation. */
  const lastStep = (id: string, sessionId: string, attempt: number) =>
    completeAndAdvance(store.db, {
      leaf: {
        path: 'seq/a',
        attempt,
        fields: { status: 'completed', escalated: false, output: 'A', error: null },
      },
      expectedCheckpoint: { completedSubAgents: 0 },
      advance: {
        invocationId: id,
        sessionId,
        path: 'seq',
        update: {
          status: 'completed',
          checkpoint: { completedSubAgents: 1 },
          escalated: false,
          error: null,
          output: 'A',
        },
        events: [],
        children: [],
      },
      finish: { output: 'A', escalated: false },
    });

  it("ends the invocation with the root's last step, in the same statement", async () => {
    const sessionId = await setUp('inv_finish');
    const result = await lastStep('inv_finish', sessionId, 1);
    expect(result.outcome).toBe('done');
    const inv = await getInvocation(store.db, 'inv_finish');
    expect(inv).toMatchObject({ status: 'completed', output: 'A', tempState: {} });
    expect(inv?.endedAt).toBeInstanceOf(Date);
    expect((await snapshot('inv_finish', sessionId)).nodes.seq?.status).toBe('completed');
  });

  it('does not end the invocation when the leaf was superseded', async () => {
    const sessionId = await setUp('inv_finish_fenced');
    expect(await lastStep('inv_finish_fenced', sessionId, 2)).toEqual({ outcome: 'fenced' });
    expect((await getInvocation(store.db, 'inv_finish_fenced'))?.status).toBe('running');
  });
});
