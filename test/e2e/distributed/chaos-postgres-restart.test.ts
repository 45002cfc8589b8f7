/**
 * PostgreSQL restarted mid-run (acceptance 4): the chaos workload on this file's own PostgreSQL, which is shut
 * down ("fast" shutdown) and started again on the same port and data directory while steps run. Workers wait for
 * it and carry on: every invocation completes with exactly-once tool effects, and no worker process exited.
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
import { startLocalPostgres, type LocalServer } from '../../support/local-services.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../../support/services.js';
import { expectChaosGuarantees, runChaos } from './chaos-workload.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-pg-'));
// The postgres user must be able to reach its data directory below this one.
chmodSync(dir, 0o755);
let postgres: LocalServer = await startLocalPostgres(join(dir, 'pg'));
afterAll(async () => {
  await postgres.stop();
  rmSync(dir, { recursive: true, force: true });
});
const port = Number(new URL(postgres.url).port);

const ledgerUrl = await createTestDatabase();
await prepareLedger(ledgerUrl);
const options: ClusterOptions = {
  databaseUrl: postgres.url,
  redisUrl: testRedisUrl(),
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
  postgres = await startLocalPostgres(join(dir, 'pg'), { port });
}

describe('distributed chaos: PostgreSQL restarted', () => {
  it('completes 50 nested runs across a PostgreSQL restart with no worker exiting', async () => {
    const cluster = new Cluster(options);
    const workers = await cluster.start(3); // the first one migrates the new server
    engine = await producerEngine(options);
    const result = await runChaos({
      engine,
      cluster,
      engineDb,
      ledgerDb,
      tag: 'pgrestart',
      disruptions: [{ name: 'PostgreSQL fast shutdown + start', atProgress: 0.4, run: restartPostgres }],
    });
    // No kills here: the per-step bound on model calls still holds, the per-kill one does not apply.
    expectChaosGuarantees(result, { modelCallsBoundedByKills: false });
    expect(cluster.workers).toHaveLength(3);
    for (const w of workers) expect(w.exit).toBeUndefined();
  });
});
