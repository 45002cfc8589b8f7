/**
 * Chaos with Redis losing everything: the chaos workload (workers SIGKILLed every ~2 s) while
 * this file's own Redis is first FLUSHALLed, then SIGKILLed and restarted empty on the same port. Postgres alone
 * says what must run, so every invocation still completes with exactly-once tool effects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { fileServices } from '../../support/processes/cluster.js';
import { startLocalRedis, type LocalServer } from '../../support/services/local-services.js';
import { expectChaosGuarantees, runChaosOnWorkers } from './chaos-workload.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-redis-'));
let redis: LocalServer = await startLocalRedis(dir);
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});
const port = Number(new URL(redis.url).port);
const { options, engine, db } = await fileServices({ redisUrl: redis.url });

async function flushAll(): Promise<void> {
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  try {
    expect(await client.flushall()).toBe('OK');
  } finally {
    client.disconnect();
  }
}

async function killAndRestartRedis(): Promise<void> {
  process.kill(redis.pid, 'SIGKILL');
  await redis.stop(); // resolves once the killed server has exited
  redis = await startLocalRedis(dir, { port });
}

describe('distributed chaos: Redis flushed and killed', () => {
  it('completes 50 nested runs through a FLUSHALL and a Redis SIGKILL + restart, workers killed meanwhile', async () => {
    const { result } = await runChaosOnWorkers(options, {
      engine,
      engineDb: db,
      ledgerDb: db,
      tag: 'redis',
      killEveryMs: 2_000,
      disruptions: [
        { name: 'FLUSHALL', atProgress: 0.25, run: flushAll },
        {
          name: 'redis-server SIGKILL + restart on the same port',
          atProgress: 0.6,
          run: killAndRestartRedis,
        },
      ],
    });
    expectChaosGuarantees(result);
  });
});
