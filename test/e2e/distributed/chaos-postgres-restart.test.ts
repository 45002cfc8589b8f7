/**
 * PostgreSQL restarted mid-run: the chaos workload on this file's own PostgreSQL, which is shut
 * down ("fast" shutdown) and started again on the same port and data directory while steps run. Workers wait for
 * it and carry on: every invocation completes with exactly-once tool effects, and no worker process exited.
 * The fixture ledger lives on the shared test server, which stays up (the outside world of the tools).
 */
import { describe, expect, it } from 'vitest';
import { expectChaosGuarantees, runChaosOnWorkers } from './chaos-workload.js';
import { ownPostgres } from './own-postgres.js';

const db = await ownPostgres({ queue: 'redis' });
const { options, engineDb, ledgerDb } = db;

describe('distributed chaos: PostgreSQL restarted', () => {
  it('completes 50 nested runs across a PostgreSQL restart with no worker exiting', async () => {
    const { result, cluster, workers } = await runChaosOnWorkers(options, {
      producer: db.producer,
      engineDb,
      ledgerDb,
      tag: 'pgrestart',
      disruptions: [{ name: 'PostgreSQL fast shutdown + start', atProgress: 0.4, run: db.restart }],
    });
    // No kills here: the per-step bound on model calls still holds, the per-kill one does not apply.
    expectChaosGuarantees(result, { modelCallsBoundedByKills: false });
    expect(cluster.workers).toHaveLength(3);
    for (const w of workers) expect(w.exit).toBeUndefined();
  });
});
