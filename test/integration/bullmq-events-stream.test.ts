/**
 * BullMQ's event stream stays short: each agentloom queue trims `bull:<queue>:events` to about
 * EVENTS_MAX_LEN entries instead of BullMQ's 10 000, so Redis memory is flat minutes into a steady load rather than
 * after an hour.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { BullmqQueue } from '../../src/queue/index.js';
import { EVENTS_MAX_LEN } from '../../src/queue/bullmq-queue.js';
import { testQueuePrefix, testRedisUrl } from '../support/services/services.js';

const redis = new Redis(testRedisUrl());
afterAll(() => redis.disconnect());

it('trims the event stream of a queue to about EVENTS_MAX_LEN entries', async () => {
  const prefix = testQueuePrefix();
  const queue = new BullmqQueue({ connection: { redis: testRedisUrl() }, prefix, leaseMs: 5_000 });
  try {
    const jobs = Array.from({ length: 3 * EVENTS_MAX_LEN }, (_, i) => ({
      invocationId: `inv_${i}`,
      path: 'agent',
      wake: 1,
    }));
    for (let i = 0; i < jobs.length; i += 500) await queue.enqueue(jobs.slice(i, i + 500));
    const key = `bull:${prefix}-steps`;
    expect(await redis.hget(`${key}:meta`, 'opts.maxLenEvents')).toBe(String(EVENTS_MAX_LEN));
    const length = await redis.xlen(`${key}:events`);
    // MAXLEN ~ trims whole stream nodes (100 entries by default), so a little over the bound is expected.
    expect(length).toBeGreaterThan(0);
    expect(length).toBeLessThanOrEqual(EVENTS_MAX_LEN + 200);
  } finally {
    await queue.close();
    const keys = await redis.keys(`bull:${prefix}-steps*`);
    if (keys.length > 0) await redis.del(...keys);
  }
});
