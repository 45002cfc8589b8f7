/**
 * PostgreSQL restarted, then crashed, mid-run with the PostgreSQL-only queue (issue 33): the chaos workload on this
 * file's own PostgreSQL, which holds both the steps and BullMQ's queue. It is shut down ("fast") and started again,
 * then crashed (an immediate shutdown: what is still in its WAL buffers is lost) and started again, on the same port
 * while steps run. The steps commit durably (`synchronous_commit` on, as in production); the queue's connections
 * commit asynchronously, so the crash may take the last wake-ups with it — the reconciler re-wakes their nodes from
 * the nodes themselves. And a BullMQ producer first used while the server was away (BullMQ's PostgreSQL backend
 * keeps a failed schema check for good) is replaced, not kept failing every add: every invocation completes, with
 * exactly-once tool effects, well within the time limit, and no worker process exits.
 * The fixture ledger lives on the shared test server, which stays up (the outside world of the tools).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../../src/index.js';
import {
  Cluster,
  prepareLedger,
  producerEngine,
  sqlPool,
  type ClusterOptions,
} from '../../support/cluster.js';
import { startLocalPostgres, type LocalPostgres } from '../../support/local-services.js';
import { createTestDatabase, testQueuePrefix } from '../../support/services.js';
import { expectChaosGuarantees, runChaos } from './chaos-workload.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-pgcrash-'));
// The postgres user must be able to reach its data directory below this one.
chmodSync(dir, 0o755);
let postgres: LocalPostgres = await startLocalPostgres(join(dir, 'pg'), { durableCommits: true });
afterAll(async () => {
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
});
const port = Number(new URL(postgres.url).port);

const ledgerUrl = await createTestDatabase();
await prepareLedger(ledgerUrl);
const options: ClusterOptions = {
  databaseUrl: postgres.url,
  queue: 'postgres',
  prefix: testQueuePrefix(),
  ledgerUrl,
  leaseMs: 2_000,
};
const engineDb = sqlPool(postgres.url);
const ledgerDb = sqlPool(ledgerUrl);
let engine: Engine | undefined;
afterAll(async () => {
  await engine?.close();
  await engineDb.end();
  await ledgerDb.end();
});

async function restartPostgres(): Promise<void> {
  await postgres.stop(); // SIGINT: fast shutdown, clients disconnected
  postgres = await startLocalPostgres(join(dir, 'pg'), { port, durableCommits: true });
}

async function crashPostgres(): Promise<void> {
  await postgres.crash(); // SIGQUIT: immediate shutdown, crash recovery at the next start
  postgres = await startLocalPostgres(join(dir, 'pg'), { port, durableCommits: true });
}

describe('distributed chaos: PostgreSQL restarted and crashed, PostgreSQL-only queue', () => {
  it('completes 50 nested runs across a restart and a crash of the database that holds steps and queue', async () => {
    const synchronous = await engineDb.query<{ synchronous_commit: string }>('show synchronous_commit');
    expect(synchronous.rows[0]?.synchronous_commit).toBe('on');
    const cluster = new Cluster(options);
    const workers = await cluster.start(3); // the first one migrates the new server
    for (const w of workers)
      expect(w.logLines().find((l) => l.msg === 'worker started')?.queue).toBe('postgres');
    engine = await producerEngine(options);
    const result = await runChaos({
      engine,
      cluster,
      engineDb,
      ledgerDb,
      tag: 'pgcrash',
      disruptions: [
        { name: 'PostgreSQL fast shutdown + start', atProgress: 0.3, run: restartPostgres },
        { name: 'PostgreSQL immediate shutdown (crash) + start', atProgress: 0.65, run: crashPostgres },
      ],
      // ~6 s on an idle machine; a worker whose producer stayed broken never finished (the 180 s default).
      timeoutMs: 60_000,
    });
    // No kills here: the per-step bound on model calls still holds, the per-kill one does not apply.
    expectChaosGuarantees(result, { modelCallsBoundedByKills: false });
    expect(cluster.workers).toHaveLength(3);
    for (const w of workers) expect(w.exit).toBeUndefined();
  });
});
