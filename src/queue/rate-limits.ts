/**
 * What model rate limits are (`createEngine({ rateLimits })`, an apps module's, AGENTLOOM_RATE_LIMITS) and their
 * check. Apart from the limiter (model-rate-limiter.ts) so that checking them loads neither rate-limiter-flexible
 * nor ioredis: a process imports those only when it has limits to keep.
 */
import { AgentloomError } from '../core/errors.js';

/** One set of limits. */
export interface RateLimit {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  /** Calls in flight at once, across every worker. */
  concurrency?: number;
}

/**
 * The limits of one model id (`openai/gpt-4.1`), provider (`openai`: its models together) or `*` (every model
 * together) — `createEngine({ rateLimits: { [key]: … } })`. `perApp`: the share of them one app may use, so one
 * app's flood leaves the rest to the others.
 */
export interface ModelRateLimit extends RateLimit {
  perApp?: RateLimit;
}

const LIMIT_FIELDS = ['requestsPerMinute', 'tokensPerMinute', 'concurrency'] as const;
const APP_SHAPE = '{ requestsPerMinute?, tokensPerMinute?, concurrency? }';
const SHAPE = '{ requestsPerMinute?, tokensPerMinute?, concurrency?, perApp?: { … } }';

function validateLimit(limit: unknown, at: string, nested: boolean): void {
  if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
    throw new AgentloomError('VALIDATION', `${at} must be ${nested ? APP_SHAPE : SHAPE}`, {
      details: { field: at },
    });
  }
  for (const [key, v] of Object.entries(limit as Record<string, unknown>)) {
    if (key === 'perApp' && !nested) {
      validateLimit(v, `${at}.perApp`, true);
      continue;
    }
    if (!(LIMIT_FIELDS as readonly string[]).includes(key)) {
      throw new AgentloomError(
        'VALIDATION',
        `${at}.${key} is not a rate limit: use requestsPerMinute, tokensPerMinute, concurrency${nested ? '' : ' or perApp'}`,
        { details: { field: `${at}.${key}` } },
      );
    }
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
      throw new AgentloomError('VALIDATION', `${at}.${key} must be an integer ≥ 1 (omit it for no limit)`, {
        details: { field: `${at}.${key}` },
      });
    }
  }
}

/** Checks `rateLimits`; the error names the field and says what to write. */
export function validateRateLimits(value: unknown, field = 'rateLimits'): Record<string, ModelRateLimit> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AgentloomError(
      'VALIDATION',
      `${field} must be an object of model id, provider or "*" → ${SHAPE}, e.g. { "openai/gpt-4.1": { requestsPerMinute: 60 } }`,
      { details: { field } },
    );
  }
  for (const [id, limit] of Object.entries(value as Record<string, unknown>)) {
    if (id.trim() === '') {
      throw new AgentloomError(
        'VALIDATION',
        `${field} has an empty key: name a model id, a provider or "*"`,
        {
          details: { field },
        },
      );
    }
    validateLimit(limit, `${field}["${id}"]`, false);
  }
  return value as Record<string, ModelRateLimit>;
}
