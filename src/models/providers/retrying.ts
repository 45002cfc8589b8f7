/**
 * The one retry loop of the model adapters (Gemini, OpenAI, Anthropic): transient failures (408, 409, 429, 5xx
 * including Anthropic's 529, network failures) are retried with bounded, jittered exponential backoff that
 * honours the server's `retry-after-ms` / `retry-after`; anything else fails at once. Each adapter turns its
 * SDK's own retrying off, so this loop is the single retry owner of a model call (STYLE.md "Errors").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentloomError } from '../../core/errors.js';
import type { GenerateOptions } from '../model.js';

/** Retry settings as an adapter's options give them. */
export interface RetryOptions {
  /** Attempts per call, the first included. Default 5; 1 disables retrying. */
  maxAttempts?: number;
  /** Backoff ceiling before the first retry, in ms; doubles per retry (full jitter). Default 500. */
  initialBackoffMs?: number;
  /** Upper bound of any wait between attempts, server retry hints included, in ms. Default 30000. */
  maxBackoffMs?: number;
}

/** {@link RetryOptions} with their defaults applied (resolved once, in an adapter's constructor). */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

/** Applies the defaults of {@link RetryOptions}. */
export function resolveRetryPolicy(options: RetryOptions): RetryPolicy {
  return Object.freeze({
    maxAttempts: Math.max(1, options.maxAttempts ?? 5),
    initialBackoffMs: Math.max(0, options.initialBackoffMs ?? 500),
    maxBackoffMs: Math.max(0, options.maxBackoffMs ?? 30_000),
  });
}

/** What an adapter reads from a failed attempt. */
export interface AttemptFailure {
  /** Whether another attempt may succeed (see {@link isTransientStatus}, {@link isNetworkFailure}). */
  transient: boolean;
  /** The HTTP status, when the server answered. */
  status?: number;
  /** The provider's name for the failure ('RESOURCE_EXHAUSTED', 'invalid_request_error'), if any. */
  kind?: string;
  /** The server's retry hint, in ms (already parsed; see {@link retryAfterMsOf}). */
  retryAfterMs?: number;
  /** The provider's own message (or the network error's). */
  reason: string;
}

/** One model call to run under {@link callWithRetries}. */
export interface RetriedCall<T> {
  /** The provider as users name it ('Gemini', 'OpenAI', 'Anthropic'): it starts every error message. */
  provider: string;
  model: string;
  policy: RetryPolicy;
  /** Cancels the call: the attempt in flight (the adapter passes it to its SDK) and any wait between attempts. */
  signal?: AbortSignal | undefined;
  /** Strings never to repeat in an error (the API key): replaced by `[redacted]` in messages. */
  secrets?: readonly string[];
  /**
   * The engine's lease check ({@link GenerateOptions.sendLeased}): each attempt, the first and every retry, starts
   * through it, so a worker frozen during a backoff does not send on waking once another took its step over.
   */
  sendLeased?: GenerateOptions['sendLeased'];
  /** Told of a 429 with a retry-after before the retry ({@link GenerateOptions.onRateLimited}); may throw. */
  onRateLimited?: GenerateOptions['onRateLimited'];
  /** One attempt. An AgentloomError it throws (a malformed answer) is passed on as it is, never retried. */
  attempt: (attemptNumber: number) => Promise<T>;
  /** Reads a failure of {@link attempt}. */
  describe: (err: unknown) => AttemptFailure;
}

/**
 * Runs `call.attempt` until it succeeds, fails for good, or `call.signal` aborts.
 * @throws AgentloomError `CANCELLED` when the signal aborts (before, during or between attempts); `MODEL_ERROR`
 *   when the call fails for good (`retryable` says whether the last failure was transient; `details` holds the
 *   HTTP status and the model).
 */
export async function callWithRetries<T>(call: RetriedCall<T>): Promise<T> {
  const { policy, signal } = call;
  for (let attempt = 1; ; attempt++) {
    try {
      if (signal?.aborted) throw signal.reason;
      return await (call.sendLeased ? call.sendLeased(() => call.attempt(attempt)) : call.attempt(attempt));
    } catch (err) {
      if (signal?.aborted) throw cancelledError(call.provider, call.model, err);
      if (err instanceof AgentloomError) throw err;
      const failure = call.describe(err);
      // A shared limiter learns the provider's hint for every worker (and may stop this call: it throws).
      if (failure.status === 429 && failure.retryAfterMs !== undefined && call.onRateLimited) {
        await call.onRateLimited(failure.retryAfterMs);
      }
      if (!failure.transient || attempt >= policy.maxAttempts) {
        throw modelError(failure, { ...call, attempt, cause: err });
      }
      try {
        await sleep(
          backoffMs(policy, attempt, failure.retryAfterMs),
          undefined,
          signal ? { signal } : undefined,
        );
      } catch (sleepErr) {
        throw cancelledError(call.provider, call.model, sleepErr);
      }
    }
  }
}

/** The wait before attempt `attempt + 1`: the server's hint (capped) or full jitter under a doubling ceiling. */
export function backoffMs(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxBackoffMs);
  return Math.random() * Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
}

/** 408 (timeout), 409 (conflict/aborted), 429 (rate limit) and 5xx (Anthropic's 529 overloaded included). */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || (status >= 500 && status < 600);
}

/**
 * A streamed answer that ended before the provider said it was complete (no finish reason, no message_stop):
 * the connection was cut cleanly mid-answer. Transient, like any lost connection; what was assembled so far is
 * dropped (never half a call).
 */
export class IncompleteStreamError extends Error {
  constructor(provider: string) {
    super(`the ${provider} stream ended before the answer was complete`);
    this.name = 'IncompleteStreamError';
  }
}

const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * A network failure or a per-attempt timeout anywhere in the cause chain: a socket error code, an
 * AbortError/TimeoutError (the SDK's own timeout; a cancelled call is recognised earlier, by its signal),
 * Node fetch's `fetch failed` / `terminated` (a connection dropped mid-body), or an {@link IncompleteStreamError}.
 */
export function isNetworkFailure(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof IncompleteStreamError) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    if (e.name === 'AbortError' || e.name === 'TimeoutError') return true;
    if (e instanceof TypeError && (e.message === 'fetch failed' || e.message === 'terminated')) return true;
  }
  return false;
}

/** Retry-After as delta-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfterMs(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The server's retry hint of a failed response: `retry-after-ms` (OpenAI, Anthropic) before `retry-after`. */
export function retryAfterMsOf(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  return parseRetryAfterMs(headers.get('retry-after'));
}

/** `text` with every secret of `secrets` (non-empty ones) replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[] | undefined): string {
  let out = text;
  for (const secret of secrets ?? []) if (secret !== '') out = out.split(secret).join('[redacted]');
  return out;
}

/** The error of a call cancelled through its signal. */
export function cancelledError(provider: string, model: string, cause: unknown): AgentloomError {
  return new AgentloomError('CANCELLED', `The call to ${provider} model '${model}' was cancelled.`, {
    details: { model },
    cause,
  });
}

/**
 * The error of a call that failed for good: "<provider> model '<model>' failed with HTTP <status> <kind> after
 * <n> attempts: <provider's message>", with every secret redacted (the cause's message too, as it may be logged).
 */
export function modelError(
  failure: AttemptFailure,
  ctx: { provider: string; model: string; attempt: number; secrets?: readonly string[]; cause: unknown },
): AgentloomError {
  const { status, kind } = failure;
  const what = status === undefined ? 'failed' : `failed with HTTP ${status}${kind ? ` ${kind}` : ''}`;
  const tries = ctx.attempt === 1 ? '' : ` after ${ctx.attempt} attempts`;
  if (ctx.secrets?.length && ctx.cause instanceof Error) {
    ctx.cause.message = redact(ctx.cause.message, ctx.secrets);
  }
  const message = `${ctx.provider} model '${ctx.model}' ${what}${tries}: ${failure.reason}`;
  return new AgentloomError('MODEL_ERROR', redact(message, ctx.secrets), {
    retryable: failure.transient,
    details: { status, model: ctx.model },
    cause: ctx.cause,
  });
}
