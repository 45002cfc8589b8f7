/**
 * Issue 35 rate limits, the shared limiter: two limiters on one Redis stand for two workers (and memory for one
 * process). Counts only, never speed: each minute window holds exactly the limit.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import {
  ModelRateLimiter,
  validateRateLimits,
  type ModelRateLimit,
} from '../../src/queue/model-rate-limiter.js';
import { testQueuePrefix, testRedisUrl } from '../support/services.js';

const clients: Redis[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
});

/** Two "workers" sharing one store: two Redis clients and limiters on one prefix, or one memory limiter twice. */
function pair(
  store: 'redis' | 'memory',
  limits: Record<string, ModelRateLimit>,
): [ModelRateLimiter, ModelRateLimiter] {
  if (store === 'memory') {
    const one = new ModelRateLimiter(limits);
    return [one, one];
  }
  const prefix = testQueuePrefix();
  const make = () => {
    const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    clients.push(redis);
    return new ModelRateLimiter(limits, { redis, prefix });
  };
  return [make(), make()];
}

describe.each(['redis', 'memory'] as const)('ModelRateLimiter on %s', (store) => {
  it('grants requestsPerMinute requests in all, across workers, then says how long to wait', async () => {
    const [a, b] = pair(store, { 'openai/gpt-4.1': { requestsPerMinute: 5 } });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).acquire('openai/gpt-4.1', 0)),
    );
    expect(answers.filter((x) => x.ok)).toHaveLength(5);
    for (const x of answers.filter((x) => !x.ok)) {
      expect(x.ok === false && x.waitMs > 0 && x.waitMs <= 60_000).toBe(true);
    }
    // another model is not limited by this one
    expect(await a.acquire('openai/gpt-4.1-mini', 0)).toEqual({ ok: true });
  });

  it('reserves estimated tokens and settles on the actual usage', async () => {
    const [a, b] = pair(store, { m: { tokensPerMinute: 1000, requestsPerMinute: 100 } });
    expect((await a.acquire('m', 600)).ok).toBe(true);
    expect((await b.acquire('m', 600)).ok).toBe(false);
    await a.settle('m', 600, 100); // 500 given back: 100 used
    expect((await b.acquire('m', 600)).ok).toBe(true); // 700
    await b.settle('m', 600, 900); // 300 more charged: 1000 used
    expect((await a.acquire('m', 1)).ok).toBe(false);
  });

  it("learns a 429's retry-after for every worker", async () => {
    const [a, b] = pair(store, { m: { requestsPerMinute: 1000 } });
    expect((await b.acquire('m', 0)).ok).toBe(true);
    await a.learnRetryAfter('m', 20_000);
    const after = await b.acquire('m', 0);
    expect(after.ok).toBe(false);
    expect(after.ok === false && after.waitMs > 10_000 && after.waitMs <= 20_000).toBe(true);
  });
});

describe('validateRateLimits', () => {
  it('names the bad field', () => {
    for (const [bad, field] of [
      [{ m: { requestsPerMinute: 0 } }, 'rateLimits["m"].requestsPerMinute'],
      [{ m: { rpm: 5 } }, 'rateLimits["m"].rpm'],
      [[], 'rateLimits'],
    ] as const) {
      let caught: unknown;
      try {
        validateRateLimits(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(AgentloomError);
      expect((caught as AgentloomError).details?.field).toBe(field);
    }
  });
});
