/**
 * A parallel branch's end in one statement (store/step/branch-ends.ts `completeBranch`): the leaf settles under its fence and
 * its status is recorded in the parent's checkpoint without reading the siblings; the branch that settles the last
 * one makes the parent runnable for the join. On PostgreSQL, with branches ending at once on separate connections
 * (the setting in which a read-modify-write of the checkpoint would lose a sibling's record).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getNode, reconcileNodes, updateNodeTx } from '../../src/store/repos/nodes.js';
import { listEvents } from '../../src/store/repos/events.js';
import { completeBranch, completeBranches, type BranchEnd } from '../../src/store/step/branch-ends.js';
import { Store } from '../../src/store/store.js';
import { seedRun } from '../fixtures/seed-run.js';
import { createTestDatabase } from '../support/services/services.js';

const BRANCHES = 24;
const name = (i: number) => `b${i}`;

describe('ending a parallel branch in one statement', () => {
  let store: Store;
  afterAll(async () => store?.close());

  /** An invocation with a running parallel `par` whose `n` leaf branches `par/b<i>` run (attempt 1). */
  async function setUp(id: string, n: number) {
    // A pool of 12 connections: the branches' statements really run side by side.
    store ??= await Store.open(await createTestDatabase(), { poolSize: 12 });
    const children = Object.fromEntries(Array.from({ length: n }, (_, i) => [name(i), 'pending']));
    const sessionId = await seedRun(store, {
      id,
      app: 'fan',
      nodes: [
        { path: 'par', agent: 'par', kind: 'parallel', set: { status: 'running', checkpoint: { children } } },
        ...Array.from({ length: n }, (_, i) => ({
          path: `par/${name(i)}`,
          agent: name(i),
          kind: 'custom',
          set: { status: 'running', attempt: 1, leaseOwner: 'w' },
        })),
      ],
    });
    sessions.set(id, sessionId);
  }
  const sessions = new Map<string, string>();

  const end = (id: string, i: number, attempt = 1, status: 'completed' | 'failed' = 'completed') =>
    completeBranch(store.db, {
      invocationId: id,
      sessionId: sessions.get(id) as string,
      // Each branch's last event, stored with its end.
      event: {
        id: `evt_${id}_${i}_${attempt}`,
        nodePath: `par/${name(i)}`,
        author: name(i),
        branch: `par.${name(i)}.${i}`,
        content: { role: 'model', parts: [{ text: `out ${i}` }] },
        actions: { stateDelta: {}, artifactDelta: {} },
        longRunningToolIds: null,
        errorCode: null,
        errorMessage: null,
      },
      parentPath: 'par',
      childName: name(i),
      leaf: {
        path: `par/${name(i)}`,
        attempt,
        fields: {
          status,
          escalated: false,
          output: status === 'completed' ? `out ${i}` : null,
          error: status === 'failed' ? { code: 'X', message: 'boom' } : null,
        },
      },
    });

  it('records every branch of many ending at once, and exactly the last one wakes the parent for the join', async () => {
    for (let round = 0; round < 5; round++) {
      const id = `inv_fan_${round}`;
      await setUp(id, BRANCHES);
      const before = await getNode(store.db, id, 'par');
      const results = await Promise.all(
        Array.from({ length: BRANCHES }, (_, i) => end(id, i, 1, i === 3 ? 'failed' : 'completed')),
      );
      expect(results.every((r) => r.outcome === 'done')).toBe(true);
      const joins = results.flatMap((r) => (r.outcome === 'done' && r.join ? [r.join] : []));
      expect(joins).toHaveLength(1);
      const parent = await getNode(store.db, id, 'par');
      expect(parent?.status).toBe('pending');
      expect(parent?.wake).toBe((before?.wake ?? 0) + 1);
      // The join carries the parent exactly as the statement left it (the join decides from it without a read).
      expect(joins[0]).toEqual({ path: 'par', wake: parent?.wake, node: parent });
      expect(parent?.checkpoint).toEqual({
        children: Object.fromEntries(
          Array.from({ length: BRANCHES }, (_, i) => [name(i), i === 3 ? 'failed' : 'completed']),
        ),
      });
      const leaf = await getNode(store.db, id, 'par/b3');
      expect(leaf).toMatchObject({
        status: 'failed',
        error: { code: 'X', message: 'boom' },
        leaseOwner: null,
      });
      // Every branch's event, each under its own seq.
      const events = await listEvents(store.db, sessions.get(id) as string, { invocationId: id });
      expect(events.map((e) => e.author).sort()).toEqual(
        Array.from({ length: BRANCHES }, (_, i) => name(i)).sort(),
      );
      expect(new Set(events.map((e) => e.seq)).size).toBe(BRANCHES);
    }
  });

  it('writes nothing for a superseded attempt', async () => {
    await setUp('inv_fan_fenced', 2);
    expect(await end('inv_fan_fenced', 0, 2)).toEqual({ outcome: 'fenced' });
    const sessionId = sessions.get('inv_fan_fenced') as string;
    expect(await listEvents(store.db, sessionId, { invocationId: 'inv_fan_fenced' })).toEqual([]);
    expect((await getNode(store.db, 'inv_fan_fenced', 'par'))?.checkpoint).toEqual({
      children: { b0: 'pending', b1: 'pending' },
    });
    expect((await getNode(store.db, 'inv_fan_fenced', 'par/b0'))?.status).toBe('running');
  });

  it('writes nothing when the parent is no longer running (the general path takes over)', async () => {
    await setUp('inv_fan_stale', 2);
    await updateNodeTx(store.db, 'inv_fan_stale', 'par', { status: 'cancelled' });
    expect(await end('inv_fan_stale', 0)).toEqual({ outcome: 'stale' });
    expect((await getNode(store.db, 'inv_fan_stale', 'par/b0'))?.status).toBe('running');
  });

  it('leaves a join whose wake-up was lost to the reconciler', async () => {
    await setUp('inv_fan_lost', 2);
    await end('inv_fan_lost', 0);
    const last = await end('inv_fan_lost', 1);
    expect(last).toMatchObject({ outcome: 'done', join: { path: 'par' } });
    // The wake-up is never enqueued (the worker died after the commit): the next pass finds the parent.
    const pass = await reconcileNodes(store.db, { staleMs: 0 });
    expect(pass.jobs.filter((j) => j.invocationId === 'inv_fan_lost').map((j) => j.path)).toEqual(['par']);
  });

  const branchEnd = (id: string, i: number, attempt = 1): BranchEnd => ({
    childName: name(i),
    event: {
      id: `evt_${id}_${i}_${attempt}`,
      nodePath: `par/${name(i)}`,
      author: name(i),
      branch: `par.${name(i)}.${i}`,
      content: { role: 'model', parts: [{ text: `out ${i}` }] },
      actions: { stateDelta: {}, artifactDelta: {} },
      longRunningToolIds: null,
      errorCode: null,
      errorMessage: null,
    },
    leaf: {
      path: `par/${name(i)}`,
      attempt,
      fields: { status: 'completed', escalated: false, output: `out ${i}`, error: null },
    },
  });

  it('ends several branches in one statement: each fenced alone, events in request order, one join', async () => {
    const id = 'inv_fan_batch';
    await setUp(id, 4);
    const sessionId = sessions.get(id) as string;
    // b0 and b1 first (b1 superseded: attempt 2 is not the node's), then b2, b1 again and b3 settle the rest.
    const first = await completeBranches(store.db, {
      invocationId: id,
      sessionId,
      parentPath: 'par',
      branches: [branchEnd(id, 0), branchEnd(id, 1, 2)],
    });
    expect(first).toEqual([{ outcome: 'done' }, { outcome: 'fenced' }]);
    expect((await getNode(store.db, id, 'par/b1'))?.status).toBe('running');
    const second = await completeBranches(store.db, {
      invocationId: id,
      sessionId,
      parentPath: 'par',
      branches: [branchEnd(id, 2), branchEnd(id, 1), branchEnd(id, 3)],
    });
    const parent = await getNode(store.db, id, 'par');
    expect(second).toEqual([
      { outcome: 'done', join: { path: 'par', wake: parent?.wake, node: parent } },
      { outcome: 'done' },
      { outcome: 'done' },
    ]);
    expect(parent).toMatchObject({
      status: 'pending',
      checkpoint: { children: { b0: 'completed', b1: 'completed', b2: 'completed', b3: 'completed' } },
    });
    const events = await listEvents(store.db, sessionId, { invocationId: id });
    expect(events.map((e) => [e.seq, e.author])).toEqual([
      [1, 'b0'],
      [2, 'b2'],
      [3, 'b1'],
      [4, 'b3'],
    ]);
  });

  it('ends nothing of a batch whose parent is no longer running', async () => {
    const id = 'inv_fan_batch_stale';
    await setUp(id, 2);
    await updateNodeTx(store.db, id, 'par', { status: 'cancelled' });
    expect(
      await completeBranches(store.db, {
        invocationId: id,
        sessionId: sessions.get(id) as string,
        parentPath: 'par',
        branches: [branchEnd(id, 0), branchEnd(id, 1)],
      }),
    ).toEqual([{ outcome: 'stale' }, { outcome: 'stale' }]);
    expect((await getNode(store.db, id, 'par/b0'))?.status).toBe('running');
  });
});
