/**
 * Model rate limits shared by every worker: requests and tokens per minute and calls in flight, per
 * model id, per provider or for every model (`*`), each optionally per app; in Redis when there is one, else in
 * PostgreSQL, else in this process's memory. Built on rate-limiter-flexible (maintained, atomic Lua scripts on
 * Redis, one atomic upsert on PostgreSQL, the same API over all three) rather than our own bucket arithmetic.
 *
 * Token-aware: a call reserves its estimated tokens and settles on the actual usage (the difference is given
 * back or charged). A provider's 429 with retry-after blocks the model for every worker sharing the store.
 * Concurrency: each of a limit's `concurrency` slots is a key taken with points 1 for `slotTtlMs`, deleted when
 * the call ends; a worker that dies mid-call frees its slot when the key expires (no call outlives its step's
 * deadline, which the engine passes as `slotTtlMs`).
 */
import { Redis } from 'ioredis';
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { validateRateLimits, type ModelRateLimit, type RateLimit } from './rate-limits.js';

export { validateRateLimits, type ModelRateLimit, type RateLimit } from './rate-limits.js';

/** A call's slot: settle it (always) when the call ends. */
export interface RateLimitSlot {
  /** Gives back the concurrency slots and settles the tokens on `actualTokens` (undefined: keep the estimate). */
  settle(actualTokens: number | undefined): Promise<void>;
}

/** What {@link ModelRateLimiter.acquire} answers: go with this slot, or wait this long (nothing taken). */
export type Acquired =
  | { ok: true; slot: RateLimitSlot }
  | { ok: false; waitMs: number; limit: string; reason: 'rate' | 'concurrency' | 'retry-after' };

/** Where the shared counters live. `postgres`: a node-postgres Pool of a database migrated with 0009. */
export interface RateLimitStore {
  redis?: Redis;
  postgres?: unknown;
  /** Key prefix (Redis) — the queue's prefix, so two deployments on one Redis do not share limits. */
  prefix?: string;
  /** How long a concurrency slot of a call that never settled (its worker died) is held. Default 600 000. */
  slotTtlMs?: number;
}

/** The limiters of one key (a rule, or a rule's share of one app). */
interface Bucket {
  /** What a wait names: the rule's key, with the app for a per-app share. */
  label: string;
  /** The store key of this bucket. */
  key: string;
  requests?: RateLimiterAbstract;
  tokens?: RateLimiterAbstract;
  /** One limiter of points 1 per slot (see the file comment). */
  slots?: RateLimiterAbstract;
  concurrency?: number;
}

interface Rule {
  key: string;
  limit: ModelRateLimit;
  shared: Omit<Bucket, 'key' | 'label'>;
  perApp?: Omit<Bucket, 'key' | 'label'>;
}

/** What was taken so far by one acquire, to give back on a refusal or settle after the call. */
interface Taken {
  requests: { limiter: RateLimiterAbstract; key: string }[];
  tokens: { limiter: RateLimiterAbstract; key: string }[];
  slots: { limiter: RateLimiterAbstract; key: string }[];
}

/** How long a refused concurrency slot waits before it tries again (no store tells when a slot frees). */
const SLOT_RETRY_MS = 1_000;

/** Shared per-model limiters (one key space per `prefix`), or in-memory ones without Redis or PostgreSQL. */
export class ModelRateLimiter {
  readonly #rules: Rule[] = [];
  readonly #blocked: RateLimiterAbstract;
  /** Which store the counters live in (logged). */
  readonly store: 'redis' | 'postgres' | 'memory';

  constructor(limits: Record<string, ModelRateLimit>, options: RateLimitStore = {}) {
    validateRateLimits(limits);
    const prefix = options.prefix ?? 'agentloom';
    const slotTtlS = Math.max(1, Math.ceil((options.slotTtlMs ?? 600_000) / 1000));
    this.store = options.redis ? 'redis' : options.postgres ? 'postgres' : 'memory';
    const make = (name: string, points: number, duration: number = 60): RateLimiterAbstract => {
      const keyPrefix = `${prefix}:rl:${name}`;
      if (options.redis)
        return new RateLimiterRedis({ storeClient: options.redis, points, duration, keyPrefix });
      if (options.postgres) {
        return new RateLimiterPostgres({
          storeClient: options.postgres,
          // The table comes with the engine's migrations (0009): no CREATE TABLE from a worker.
          tableName: 'rate_limits',
          tableCreated: true,
          clearExpiredByTimeout: false,
          points,
          duration,
          keyPrefix,
        });
      }
      return new RateLimiterMemory({ points, duration, keyPrefix });
    };
    const buckets = (limit: RateLimit) => ({
      ...(limit.requestsPerMinute
        ? { requests: make('req', ...requestWindow(limit.requestsPerMinute)) }
        : {}),
      ...(limit.tokensPerMinute ? { tokens: make('tok', limit.tokensPerMinute) } : {}),
      ...(limit.concurrency ? { slots: make('slot', 1, slotTtlS), concurrency: limit.concurrency } : {}),
    });
    for (const [key, limit] of Object.entries(limits)) {
      this.#rules.push({
        key,
        limit,
        shared: buckets(limit),
        ...(limit.perApp ? { perApp: buckets(limit.perApp) } : {}),
      });
    }
    this.#blocked = make('429', 1);
  }

  /** Whether `modelId` has limits here. */
  limits(modelId: string): boolean {
    return this.#rules.some((r) => matches(r.key, modelId));
  }

  /** The buckets a call of `modelId` by `app` takes from, widest last (a model's own limit is checked first). */
  #bucketsOf(modelId: string, app: string | undefined): Bucket[] {
    const out: Bucket[] = [];
    const rules = this.#rules
      .filter((r) => matches(r.key, modelId))
      .sort((a, b) => specificity(b.key) - specificity(a.key));
    for (const rule of rules) {
      // The per-app share first: an app over its share waits without touching the shared counters.
      if (rule.perApp && app !== undefined) {
        out.push({ ...rule.perApp, key: `${rule.key}|app:${app}`, label: `${rule.key} (app ${app})` });
      }
      out.push({ ...rule.shared, key: rule.key, label: rule.key });
    }
    return out;
  }

  /**
   * Takes one request, `estimatedTokens` and a concurrency slot of every limit `modelId` falls under (for `app`),
   * or answers how long to wait (taking nothing: what was taken before a refusal is given back).
   */
  async acquire(modelId: string, estimatedTokens: number, app?: string): Promise<Acquired> {
    const block = await this.#blocked.get(modelId);
    if (block && block.consumedPoints > 1 && block.msBeforeNext > 0) {
      return { ok: false, waitMs: block.msBeforeNext, limit: modelId, reason: 'retry-after' };
    }
    const buckets = this.#bucketsOf(modelId, app);
    const taken: Taken = { requests: [], tokens: [], slots: [] };
    for (const b of buckets) {
      if (b.requests) {
        const waited = await refused(b.requests, b.key, 1);
        if (waited !== undefined) return this.#refuse(taken, estimatedTokens, b.label, waited, 'rate');
        taken.requests.push({ limiter: b.requests, key: b.key });
      }
      if (b.tokens && estimatedTokens > 0) {
        const waited = await refused(b.tokens, b.key, estimatedTokens);
        if (waited !== undefined) return this.#refuse(taken, estimatedTokens, b.label, waited, 'rate');
        taken.tokens.push({ limiter: b.tokens, key: b.key });
      }
      if (b.slots && b.concurrency) {
        const slot = await takeSlot(b.slots, b.key, b.concurrency);
        if (slot === undefined) {
          return this.#refuse(taken, estimatedTokens, b.label, SLOT_RETRY_MS, 'concurrency');
        }
        taken.slots.push({ limiter: b.slots, key: slot });
      }
    }
    let settled = false;
    return {
      ok: true,
      slot: {
        settle: async (actualTokens) => {
          if (settled) return;
          settled = true;
          await Promise.all([
            ...taken.slots.map((s) => s.limiter.delete(s.key)),
            ...(actualTokens === undefined || actualTokens === estimatedTokens
              ? []
              : taken.tokens.map((t) =>
                  actualTokens < estimatedTokens
                    ? t.limiter.reward(t.key, estimatedTokens - actualTokens)
                    : t.limiter.penalty(t.key, actualTokens - estimatedTokens),
                )),
          ]);
        },
      },
    };
  }

  async #refuse(
    taken: Taken,
    estimatedTokens: number,
    limit: string,
    waitMs: number,
    reason: 'rate' | 'concurrency',
  ): Promise<Acquired> {
    await Promise.all([
      ...taken.requests.map((t) => t.limiter.reward(t.key, 1)),
      ...taken.tokens.map((t) => t.limiter.reward(t.key, estimatedTokens)),
      ...taken.slots.map((s) => s.limiter.delete(s.key)),
    ]);
    return { ok: false, waitMs: Math.max(1, waitMs), limit, reason };
  }

  /** A provider's 429 with retry-after: every worker sharing the store waits that long before calling `modelId`. */
  async learnRetryAfter(modelId: string, retryAfterMs: number): Promise<void> {
    await this.#blocked.block(modelId, Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
}

/**
 * The window of a requests-per-minute limit: the shortest of 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 and 60 s that
 * holds a whole number of requests at exactly that rate, so calls are spread over the minute rather than spent in
 * its first second. In any interval of T seconds at most rpm·T/60 + one window's requests are granted (the
 * burst): 60/min → 1 per 1 s window, so at most 11 in any 10 s; 90/min → 3 per 2 s; 7/min → 7 per minute.
 */
export function requestWindow(requestsPerMinute: number): [points: number, seconds: number] {
  for (const seconds of [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30]) {
    if ((requestsPerMinute * seconds) % 60 === 0) return [(requestsPerMinute * seconds) / 60, seconds];
  }
  return [requestsPerMinute, 60];
}

/** Whether rule `key` covers `modelId`: the id itself, its provider (`openai` for `openai/…`), or `*`. */
function matches(key: string, modelId: string): boolean {
  return key === '*' || key === modelId || modelId.startsWith(`${key}/`);
}

function specificity(key: string): number {
  return key === '*' ? 0 : key.length;
}

/**
 * Takes one of `concurrency` slots of `key` (each a key of points 1 on `limiter`), starting at a random one so
 * workers do not all probe slot 0 first; the slot's key, or undefined when all are taken.
 */
async function takeSlot(
  limiter: RateLimiterAbstract,
  key: string,
  concurrency: number,
): Promise<string | undefined> {
  const start = Math.floor(Math.random() * concurrency);
  for (let i = 0; i < concurrency; i++) {
    const slot = `${key}#${(start + i) % concurrency}`;
    try {
      await limiter.consume(slot, 1);
      return slot;
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // Refused: the consume still counted (points 2 now); the holder's delete resets it, so nothing to undo.
    }
  }
  return undefined;
}

/**
 * The wait of a refused consume, or undefined when it was granted; store errors are thrown. A refused consume
 * still counted its points (rate-limiter-flexible increments first): they are given back.
 */
async function refused(
  limiter: RateLimiterAbstract,
  key: string,
  points: number,
): Promise<number | undefined> {
  try {
    await limiter.consume(key, points);
    return undefined;
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    await limiter.reward(key, points);
    return Math.max(1, err.msBeforeNext);
  }
}

/** Where {@link openModelRateLimiter} keeps the counters: Redis by URL, a PostgreSQL pool, or memory. */
export interface RateLimiterTarget {
  redisUrl?: string;
  postgres?: unknown;
  prefix?: string;
  slotTtlMs?: number;
}

/** A limiter on its own Redis connection (closed by `close`), or over the given pool, or in memory. */
export function openModelRateLimiter(
  limits: Record<string, ModelRateLimit>,
  target: RateLimiterTarget,
): { limiter: ModelRateLimiter; close: () => Promise<void> } {
  const { redisUrl, ...rest } = target;
  // Fail fast while Redis is away: the step stops and is redelivered, never blocks its worker on a queue.
  const redis = redisUrl ? new Redis(redisUrl, { maxRetriesPerRequest: 1 }) : undefined;
  const limiter = new ModelRateLimiter(limits, { ...rest, ...(redis ? { redis } : {}) });
  return {
    limiter,
    close: async () => {
      await redis?.quit().catch(() => redis.disconnect());
    },
  };
}
