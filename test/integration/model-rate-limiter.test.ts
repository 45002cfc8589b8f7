/**
 * Rate limits of model calls, the shared limiter: two limiters on one store stand for two workers — Redis, PostgreSQL
 * (the `rate_limits` table of migration 0009, through a node-postgres pool) — and memory for one process. Counts
 * only, never speed: each window holds exactly its share.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import {
  ModelRateLimiter,
  requestWindow,
  validateRateLimits,
  type Acquired,
  type ModelRateLimit,
} from '../../src/queue/model-rate-limiter.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
});

let pool: pg.Pool | undefined;
async function pgPool(): Promise<pg.Pool> {
  if (!pool) {
    const p = new pg.Pool({ connectionString: await createTestDatabase(), max: 4 });
    closers.push(() => p.end());
    pool = p;
  }
  return pool;
}

type StoreName = 'redis' | 'postgres' | 'memory';

/** Two "workers" sharing one store: two clients and limiters on one prefix, or one memory limiter twice. */
async function pair(
  store: StoreName,
  limits: Record<string, ModelRateLimit>,
): Promise<[ModelRateLimiter, ModelRateLimiter]> {
  if (store === 'memory') {
    const one = new ModelRateLimiter(limits);
    return [one, one];
  }
  const prefix = testQueuePrefix();
  if (store === 'postgres') {
    const postgres = await pgPool();
    return [
      new ModelRateLimiter(limits, { postgres, prefix }),
      new ModelRateLimiter(limits, { postgres, prefix }),
    ];
  }
  const make = () => {
    const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    closers.push(() => redis.quit());
    return new ModelRateLimiter(limits, { redis, prefix });
  };
  return [make(), make()];
}

const granted = (answers: Acquired[]) => answers.filter((a) => a.ok);

describe.each(['redis', 'postgres', 'memory'] as const)('ModelRateLimiter on %s', (store) => {
  it('grants a window of requestsPerMinute requests in all, across workers, then says how long to wait', async () => {
    // 6/min: one window of 6 per minute (the shortest whole window: 10 s holds 1).
    const [a, b] = await pair(store, { 'openai/gpt-4.1': { requestsPerMinute: 6 } });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).acquire('openai/gpt-4.1', 0)),
    );
    expect(granted(answers)).toHaveLength(1);
    for (const x of answers.filter((x) => !x.ok)) {
      expect(x.ok === false && x.waitMs > 0 && x.waitMs <= 10_000 && x.reason === 'rate').toBe(true);
      expect(x.ok === false && x.limit).toBe('openai/gpt-4.1');
    }
    // another model is not limited by this one
    expect((await a.acquire('openai/gpt-4.1-mini', 0)).ok).toBe(true);
  });

  it('reserves estimated tokens and settles on the actual usage', async () => {
    const [a, b] = await pair(store, { m: { tokensPerMinute: 1000 } });
    const first = await a.acquire('m', 600);
    expect(first.ok).toBe(true);
    expect((await b.acquire('m', 600)).ok).toBe(false);
    if (first.ok) await first.slot.settle(100); // 500 given back: 100 used
    const second = await b.acquire('m', 600); // 700
    expect(second.ok).toBe(true);
    if (second.ok) await second.slot.settle(900); // 300 more charged: 1000 used
    expect((await a.acquire('m', 1)).ok).toBe(false);
  });

  it('holds at most `concurrency` calls in flight across workers; a settled call frees its slot', async () => {
    const [a, b] = await pair(store, { m: { concurrency: 2 } });
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).acquire('m', 0)));
    const ok = granted(answers);
    expect(ok).toHaveLength(2);
    const refused = answers.find((x) => !x.ok);
    expect(refused?.ok === false && refused.reason).toBe('concurrency');
    for (const x of ok) if (x.ok) await x.slot.settle(undefined);
    const again = await Promise.all(Array.from({ length: 3 }, () => a.acquire('m', 0)));
    expect(granted(again)).toHaveLength(2);
  });

  it("frees the slot of a worker that died mid-call when the slot's lease expires", async () => {
    const limits = { m: { concurrency: 1 } };
    const prefix = testQueuePrefix();
    const redis = store === 'redis' ? new Redis(testRedisUrl(), { maxRetriesPerRequest: null }) : undefined;
    if (redis) closers.push(() => redis.quit());
    const postgres = store === 'postgres' ? await pgPool() : undefined;
    const opts = { prefix, slotTtlMs: 1_000, ...(redis ? { redis } : {}), ...(postgres ? { postgres } : {}) };
    const dead = new ModelRateLimiter(limits, opts);
    const alive = store === 'memory' ? dead : new ModelRateLimiter(limits, opts);
    expect((await dead.acquire('m', 0)).ok).toBe(true); // never settled
    expect((await alive.acquire('m', 0)).ok).toBe(false);
    await new Promise((r) => setTimeout(r, 1_300));
    expect((await alive.acquire('m', 0)).ok).toBe(true);
  });

  it('a provider limit covers its models together, and a model limit is checked with it', async () => {
    // 7/min: one window of 7 per minute.
    const [a, b] = await pair(store, { openai: { requestsPerMinute: 7 }, '*': { concurrency: 50 } });
    const ids = ['openai/gpt-4.1', 'openai/gpt-4.1-mini', 'openai/o3'];
    const answers = await Promise.all(
      Array.from({ length: 9 }, (_, i) => (i % 2 ? a : b).acquire(ids[i % 3] as string, 0)),
    );
    expect(granted(answers)).toHaveLength(7);
    expect((await a.acquire('anthropic/claude-sonnet-4-5', 0)).ok).toBe(true);
  });

  it("per-app shares: one app's flood leaves the rest of the model to the others", async () => {
    // 14/min: 7 per 30 s window; each app at most 6/min: 1 per 10 s window.
    const [a, b] = await pair(store, { m: { requestsPerMinute: 14, perApp: { requestsPerMinute: 6 } } });
    const flood = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).acquire('m', 0, 'flood')),
    );
    expect(granted(flood)).toHaveLength(1);
    const refused = flood.find((x) => !x.ok);
    expect(refused?.ok === false && refused.limit).toBe('m (app flood)');
    // Without the share the flood would have taken all 7 of the window; the other apps still get the rest.
    const others = await Promise.all(Array.from({ length: 9 }, (_, i) => b.acquire('m', 0, `app${i}`)));
    expect(granted(others)).toHaveLength(6);
  });

  it("learns a 429's retry-after for every worker", async () => {
    const [a, b] = await pair(store, { m: { requestsPerMinute: 1000 } });
    expect((await b.acquire('m', 0)).ok).toBe(true);
    await a.learnRetryAfter('m', 20_000);
    const after = await b.acquire('m', 0);
    expect(after.ok).toBe(false);
    expect(after.ok === false && after.reason === 'retry-after').toBe(true);
    expect(after.ok === false && after.waitMs > 10_000 && after.waitMs <= 20_000).toBe(true);
  });
});

describe('requestWindow', () => {
  it('spreads a minute into the shortest whole window (its burst)', () => {
    expect(requestWindow(60)).toEqual([1, 1]);
    expect(requestWindow(90)).toEqual([3, 2]);
    expect(requestWindow(6)).toEqual([1, 10]);
    expect(requestWindow(7)).toEqual([7, 60]);
    expect(requestWindow(1000)).toEqual([50, 3]);
  });
});

describe('validateRateLimits', () => {
  it('names the bad field and says what to write', () => {
    for (const [bad, field] of [
      [{ m: { requestsPerMinute: 0 } }, 'rateLimits["m"].requestsPerMinute'],
      [{ m: { rpm: 5 } }, 'rateLimits["m"].rpm'],
      [{ m: { concurrency: 1.5 } }, 'rateLimits["m"].concurrency'],
      [{ m: { perApp: { perApp: {} } } }, 'rateLimits["m"].perApp.perApp'],
      [{ m: 5 }, 'rateLimits["m"]'],
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
