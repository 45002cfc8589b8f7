/**
 * A workflow node's end with its parent's advance in one statement (store/step/workflow-end.ts `endAndAdvanceParent`): written
 * only when both are exactly as the caller read them, all or nothing. On PostgreSQL.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getNode } from '../../src/store/repos/nodes.js';
import { endAndAdvanceParent } from '../../src/store/step/workflow-end.js';
import { Store } from '../../src/store/store.js';
import { seedRun, sequenceAdvance } from '../fixtures/seed-run.js';
import { createTestDatabase } from '../support/services/services.js';

const JOINED = { children: { b1: 'completed', b2: 'completed' } };

describe("a node's end with its parent's advance in one statement", () => {
  let store: Store;
  afterAll(async () => store?.close());

  /** A running sequence `seq` whose first child, the parallel `seq/par`, is pending for its join. */
  async function setUp(id: string): Promise<string> {
    store ??= await Store.open(await createTestDatabase(), { poolSize: 4 });
    return seedRun(store, {
      id,
      app: 'a',
      nodes: [
        {
          path: 'seq',
          agent: 'seq',
          kind: 'sequential',
          set: { status: 'running', checkpoint: { completedSubAgents: 0 } },
        },
        { path: 'seq/par', agent: 'par', kind: 'parallel', set: { status: 'pending', checkpoint: JOINED } },
      ],
    });
  }

  const join = (
    id: string,
    sessionId: string,
    seen: { parent: Record<string, unknown>; node: Record<string, unknown> },
  ) =>
    endAndAdvanceParent(store.db, {
      node: {
        path: 'seq/par',
        expectedStatus: 'pending',
        expectedCheckpoint: seen.node,
        update: { status: 'completed', checkpoint: JOINED, escalated: false, output: 'out b2' },
      },
      expectedParentCheckpoint: seen.parent,
      advance: sequenceAdvance(id, sessionId, 'after'),
    });

  async function snapshot(id: string) {
    const [seq, par, after] = await Promise.all(
      ['seq', 'seq/par', 'seq/after'].map((path) => getNode(store.db, id, path)),
    );
    return {
      seq: seq && { status: seq.status, checkpoint: seq.checkpoint, wake: seq.wake },
      par: par && { status: par.status, output: par.output },
      after: after && { status: after.status, attempt: after.attempt, leaseOwner: after.leaseOwner },
    };
  }

  it('ends the node and advances its parent (running to running), claiming the next leaf', async () => {
    const sessionId = await setUp('inv_join_ok');
    const result = await join('inv_join_ok', sessionId, { parent: { completedSubAgents: 0 }, node: JOINED });
    expect(result.outcome).toBe('done');
    if (result.outcome !== 'done') return;
    expect(result.advance.claimed?.nodes.map((n) => n.path)).toEqual(['seq/after']);
    expect(await snapshot('inv_join_ok')).toEqual({
      seq: { status: 'running', checkpoint: { completedSubAgents: 1 }, wake: 1 },
      par: { status: 'completed', output: 'out b2' },
      after: { status: 'running', attempt: 1, leaseOwner: 'w1' },
    });
  });

  it('writes nothing when the parent moved on since it was read', async () => {
    const sessionId = await setUp('inv_join_parent');
    const before = await snapshot('inv_join_parent');
    const result = await join('inv_join_parent', sessionId, {
      parent: { completedSubAgents: 5 },
      node: JOINED,
    });
    expect(result).toEqual({ outcome: 'stale' });
    expect(await snapshot('inv_join_parent')).toEqual(before);
    expect(before.par).toEqual({ status: 'pending', output: null });
    expect(before.after).toBeUndefined();
  });

  it('writes nothing when the node changed since it was read', async () => {
    const sessionId = await setUp('inv_join_node');
    const before = await snapshot('inv_join_node');
    const result = await join('inv_join_node', sessionId, {
      parent: { completedSubAgents: 0 },
      node: { children: { b1: 'completed', b2: 'pending' } },
    });
    expect(result).toEqual({ outcome: 'stale' });
    expect(await snapshot('inv_join_node')).toEqual(before);
  });
});
