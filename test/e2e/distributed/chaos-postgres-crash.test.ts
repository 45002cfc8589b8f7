/**
 * PostgreSQL restarted, then crashed, mid-run with the PostgreSQL-only queue: the chaos workload on this
 * file's own PostgreSQL, which holds both the steps and BullMQ's queue. It is shut down ("fast") and started again,
 * then crashed (an immediate shutdown: what is still in its WAL buffers is lost) and started again, on the same port
 * while steps run. The steps commit durably (`synchronous_commit` on, as in production); the queue's connections
 * commit asynchronously, so the crash may take the last wake-ups with it — the reconciler re-wakes their nodes from
 * the nodes themselves. And a BullMQ producer first used while the server was away (BullMQ's PostgreSQL backend
 * keeps a failed schema check for good) is replaced, not kept failing every add: every invocation completes, with
 * exactly-once tool effects, well within the time limit, and no worker process exits.
 * The fixture ledger lives on the shared test server, which stays up (the outside world of the tools).
 */
import { describe, expect, it } from 'vitest';
import { expectChaosGuarantees, runChaosOnWorkers } from './chaos-workload.js';
import { ownPostgres } from './own-postgres.js';

const db = await ownPostgres({ queue: 'postgres', durableCommits: true });
const { options, engineDb, ledgerDb } = db;

describe('distributed chaos: PostgreSQL restarted and crashed, PostgreSQL-only queue', () => {
  it('completes 50 nested runs across a restart and a crash of the database that holds steps and queue', async () => {
    const synchronous = await engineDb.query<{ synchronous_commit: string }>('show synchronous_commit');
    expect(synchronous.rows[0]?.synchronous_commit).toBe('on');
    const { result, cluster, workers } = await runChaosOnWorkers(
      options,
      {
        producer: db.producer,
        engineDb,
        ledgerDb,
        tag: 'pgcrash',
        disruptions: [
          { name: 'PostgreSQL fast shutdown + start', atProgress: 0.3, run: db.restart },
          { name: 'PostgreSQL immediate shutdown (crash) + start', atProgress: 0.65, run: db.crash },
        ],
        // ~6 s on an idle machine; a worker whose producer stayed broken never finished (the 180 s default).
        timeoutMs: 60_000,
      },
      (workers) => {
        for (const w of workers)
          expect(w.logLines().find((l) => l.msg === 'worker started')?.queue).toBe('postgres');
      },
    );
    // No kills here: the per-step bound on model calls still holds, the per-kill one does not apply.
    expectChaosGuarantees(result, { modelCallsBoundedByKills: false });
    expect(cluster.workers).toHaveLength(3);
    for (const w of workers) expect(w.exit).toBeUndefined();
  });
});
