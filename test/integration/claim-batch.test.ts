/**
 * Claiming several jobs in one statement (store/step/step-claims.ts `claimForJobs`, what a worker does with a fan-out's jobs):
 * each request gets exactly the answer the one-job claim would give, and two workers claiming the same nodes at
 * once (separate pools, so separate connections) never both win a node. On PostgreSQL.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getNode, updateNodeTx } from '../../src/store/repos/nodes.js';
import { claimForJobs } from '../../src/store/step/step-claims.js';
import { Store } from '../../src/store/store.js';
import { seedRun } from '../fixtures/seed-run.js';
import { createTestDatabase } from '../support/services/services.js';

const LEASE_MS = 60_000;

describe('claiming a batch of jobs in one statement', () => {
  let url: string;
  let store: Store;
  afterAll(async () => store?.close());

  /** A running invocation with a running parallel `par` and `n` pending leaves `par/b<i>`. */
  async function setUp(id: string, n: number, hash = 'h') {
    url ??= await createTestDatabase();
    store ??= await Store.open(url);
    await seedRun(store, {
      id,
      app: 'fan',
      status: 'queued',
      definitionHash: hash,
      nodes: [
        {
          path: 'par',
          agent: 'par',
          kind: 'parallel',
          set: { status: 'running', checkpoint: { children: {} } },
        },
        ...Array.from({ length: n }, (_, i) => ({
          path: `par/b${i}`,
          agent: `b${i}`,
          kind: 'custom',
          branch: `par.b${i}.${i}`,
        })),
      ],
    });
  }

  it('answers each request as a one-job claim would', async () => {
    await setUp('inv_cb', 3);
    await setUp('inv_cb_other', 1, 'another-definition');
    // b2 runs under another worker's live lease: not claimable.
    await updateNodeTx(store.db, 'inv_cb', 'par/b2', {
      status: 'running',
      attempt: 1,
      leaseOwner: 'w-other',
      leaseExpiresAt: new Date(Date.now() + LEASE_MS),
    });
    const answers = await claimForJobs(store.db, 'w1', LEASE_MS, [
      { invocationId: 'inv_cb', path: 'par/b0', definitionHash: 'h' },
      { invocationId: 'inv_cb', path: 'par', definitionHash: 'h' },
      { invocationId: 'inv_cb', path: 'par/b1', definitionHash: 'h' },
      { invocationId: 'inv_cb', path: 'par/b2', definitionHash: 'h' },
      { invocationId: 'inv_cb_other', path: 'par/b0', definitionHash: 'h' },
      { invocationId: 'inv_missing', path: 'x', definitionHash: 'h' },
    ]);
    expect(
      answers.map((a) => a && { claimed: a.claimed, path: a.node?.path, status: a.node?.status }),
    ).toEqual([
      { claimed: true, path: 'par/b0', status: 'running' },
      { claimed: false, path: 'par', status: 'running' },
      { claimed: true, path: 'par/b1', status: 'running' },
      { claimed: false, path: 'par/b2', status: 'running' },
      { claimed: false, path: 'par/b0', status: 'pending' },
      undefined,
    ]);
    // A claimed leaf: attempt 1 (the fencing token), leased to w1, with its parent and the state it sees.
    expect(answers[0]?.node).toMatchObject({ attempt: 1, leaseOwner: 'w1' });
    expect(answers[0]?.parent?.path).toBe('par');
    expect(answers[0]?.state).toEqual({});
    // The invocation was queued: the claim marked it running (as the answer says).
    expect(answers[0]?.inv.status).toBe('running');
    expect((await getNode(store.db, 'inv_cb', 'par/b2'))?.leaseOwner).toBe('w-other');
    // Another definition's invocation is not claimed.
    expect((await getNode(store.db, 'inv_cb_other', 'par/b0'))?.attempt).toBe(0);
  });

  it('never lets two workers claim the same node, when both claim overlapping batches at once', async () => {
    const other = await Store.open(url, { migrate: false });
    try {
      for (let round = 0; round < 5; round++) {
        const id = `inv_cb_race_${round}`;
        await setUp(id, 20);
        const paths = Array.from({ length: 20 }, (_, i) => `par/b${i}`);
        const request = (order: string[]) =>
          order.map((path) => ({ invocationId: id, path, definitionHash: 'h' }));
        // Opposite orders: a batch that locked its rows in request order would deadlock with the other.
        const [a, b] = await Promise.all([
          claimForJobs(store.db, 'wa', LEASE_MS, request(paths)),
          claimForJobs(other.db, 'wb', LEASE_MS, request([...paths].reverse())),
        ]);
        const wonByA = a.filter((x) => x?.claimed).map((x) => x?.node?.path);
        const wonByB = b.filter((x) => x?.claimed).map((x) => x?.node?.path);
        expect([...wonByA, ...wonByB].sort()).toEqual([...paths].sort());
        for (const path of paths) {
          const node = await getNode(store.db, id, path);
          expect(node?.attempt).toBe(1);
          expect(node?.leaseOwner).toBe(wonByA.includes(path) ? 'wa' : 'wb');
        }
      }
    } finally {
      await other.close();
    }
  });
});
