/**
 * Model rate limits shared by every worker (issue 35): requests and tokens per minute per model id, in Redis when
 * there is one, else in this process's memory. Built on rate-limiter-flexible (maintained, atomic Lua scripts on
 * Redis, the same API over Redis, PostgreSQL and memory) rather than our own bucket arithmetic.
 *
 * Token-aware: a call reserves its estimated tokens and settles on the actual usage (the difference is given
 * back or charged). A provider's 429 with retry-after blocks the model for every worker sharing the store.
 */
import type { Redis } from 'ioredis';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { AgentloomError } from '../core/errors.js';

/** The limits of one model id (`createEngine({ rateLimits: { [modelId]: … } })`). */
export interface ModelRateLimit {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** What {@link ModelRateLimiter.acquire} answers: go, or wait this long and try again. */
export type Acquired = { ok: true } | { ok: false; waitMs: number };

interface Limiters {
  requests?: RateLimiterAbstract;
  tokens?: RateLimiterAbstract;
  /** The 429 block (points 1: consumed only by {@link ModelRateLimiter.learnRetryAfter}). */
  blocked: RateLimiterAbstract;
}

/** Checks `rateLimits`; the error names the field and says what to write. */
export function validateRateLimits(value: unknown, field = 'rateLimits'): Record<string, ModelRateLimit> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AgentloomError(
      'VALIDATION',
      `${field} must be an object of model id → { requestsPerMinute?, tokensPerMinute? }`,
      {
        details: { field },
      },
    );
  }
  for (const [id, limit] of Object.entries(value as Record<string, unknown>)) {
    const at = `${field}["${id}"]`;
    if (typeof limit !== 'object' || limit === null) {
      throw new AgentloomError('VALIDATION', `${at} must be { requestsPerMinute?, tokensPerMinute? }`, {
        details: { field: at },
      });
    }
    for (const [key, v] of Object.entries(limit as Record<string, unknown>)) {
      if (key !== 'requestsPerMinute' && key !== 'tokensPerMinute') {
        throw new AgentloomError(
          'VALIDATION',
          `${at}.${key} is not a rate limit: use requestsPerMinute or tokensPerMinute`,
          {
            details: { field: `${at}.${key}` },
          },
        );
      }
      if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
        throw new AgentloomError('VALIDATION', `${at}.${key} must be an integer ≥ 1 (omit it for no limit)`, {
          details: { field: `${at}.${key}` },
        });
      }
    }
  }
  return value as Record<string, ModelRateLimit>;
}

/** Shared per-model limiters (one Redis key space per `prefix`), or in-memory ones without Redis. */
export class ModelRateLimiter {
  readonly #byModel = new Map<string, Limiters>();

  constructor(limits: Record<string, ModelRateLimit>, options: { redis?: Redis; prefix?: string } = {}) {
    validateRateLimits(limits);
    const prefix = options.prefix ?? 'agentloom';
    const make = (name: string, points: number) =>
      options.redis
        ? new RateLimiterRedis({
            storeClient: options.redis,
            points,
            duration: 60,
            keyPrefix: `${prefix}:rl:${name}`,
          })
        : new RateLimiterMemory({ points, duration: 60, keyPrefix: name });
    for (const [model, limit] of Object.entries(limits)) {
      this.#byModel.set(model, {
        ...(limit.requestsPerMinute ? { requests: make('req', limit.requestsPerMinute) } : {}),
        ...(limit.tokensPerMinute ? { tokens: make('tok', limit.tokensPerMinute) } : {}),
        blocked: make('429', 1),
      });
    }
  }

  /** Whether `modelId` has limits here. */
  limits(modelId: string): boolean {
    return this.#byModel.has(modelId);
  }

  /**
   * Takes one request and `estimatedTokens` of `modelId`'s limits, or answers how long to wait (taking nothing:
   * a request taken before the tokens were refused is given back).
   */
  async acquire(modelId: string, estimatedTokens: number): Promise<Acquired> {
    const l = this.#byModel.get(modelId);
    if (!l) return { ok: true };
    const block = await l.blocked.get(modelId);
    if (block && block.consumedPoints > 1) return { ok: false, waitMs: Math.max(1, block.msBeforeNext) };
    if (l.requests) {
      const waited = await refused(l.requests, modelId, 1);
      if (waited !== undefined) return { ok: false, waitMs: waited };
    }
    if (l.tokens && estimatedTokens > 0) {
      const waited = await refused(l.tokens, modelId, estimatedTokens);
      if (waited !== undefined) {
        if (l.requests) await l.requests.reward(modelId, 1);
        return { ok: false, waitMs: waited };
      }
    }
    return { ok: true };
  }

  /** Settles a call's tokens on its actual usage: gives back an overestimate, charges an underestimate. */
  async settle(modelId: string, estimatedTokens: number, actualTokens: number): Promise<void> {
    const tokens = this.#byModel.get(modelId)?.tokens;
    if (!tokens || actualTokens === estimatedTokens) return;
    if (actualTokens < estimatedTokens) await tokens.reward(modelId, estimatedTokens - actualTokens);
    else await tokens.penalty(modelId, actualTokens - estimatedTokens);
  }

  /** A provider's 429 with retry-after: every worker sharing the store waits that long before calling `modelId`. */
  async learnRetryAfter(modelId: string, retryAfterMs: number): Promise<void> {
    const l = this.#byModel.get(modelId);
    if (!l) return;
    await l.blocked.block(modelId, Math.max(1, Math.ceil(retryAfterMs / 1000)));
  }
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
