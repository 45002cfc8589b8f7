/**
 * Postgres-only mode: the chaos workload with BullMQ on its PostgreSQL backend (`--queue
 * postgres`), no REDIS_URL anywhere, workers SIGKILLed every ~2 s. Same guarantees as on Redis.
 */
import { describe, expect, it } from 'vitest';
import { Cluster, fileServices } from '../../support/processes/cluster.js';
import { expectChaosGuarantees, runChaos } from './chaos-workload.js';

const { options, engine, db } = await fileServices({ queue: 'postgres' });

describe('distributed chaos on the Postgres-only queue', () => {
  it('completes 50 nested runs with exactly-once tool effects, no Redis, workers killed every ~2 s', async () => {
    expect(options.redisUrl).toBeUndefined();
    const cluster = new Cluster(options);
    const workers = await cluster.start(3);
    for (const w of workers)
      expect(w.logLines().find((l) => l.msg === 'worker started')?.queue).toBe('postgres');
    const result = await runChaos({
      engine,
      cluster,
      engineDb: db,
      ledgerDb: db,
      tag: 'pgq',
      killEveryMs: 2_000,
      minKills: 2,
    });
    expect(result.kills.length).toBeGreaterThanOrEqual(2);
    expectChaosGuarantees(result);
  });
});
