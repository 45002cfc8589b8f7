/** The shared retry loop of the model adapters and the chat conversions' pure helpers. */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import {
  CallIdPairing,
  mergeSameRoleContents,
  parseToolArguments,
  readGenerationSettings,
} from '../../src/models/providers/chat-conversion.js';
import {
  backoffMs,
  callWithRetries,
  isNetworkFailure,
  isTransientStatus,
  parseRetryAfterMs,
  resolveRetryPolicy,
  retryAfterMsOf,
  type AttemptFailure,
} from '../../src/models/providers/retrying.js';

const fast = resolveRetryPolicy({ maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 5 });

describe('retry classification and hints', () => {
  it('treats 408, 409, 429 and 5xx (529 included) as transient, other statuses not', () => {
    expect([408, 409, 429, 500, 503, 529].map(isTransientStatus)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([400, 401, 403, 404, 422].map(isTransientStatus)).toEqual([false, false, false, false, false]);
  });

  it('finds network failures in the cause chain', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(isNetworkFailure(new TypeError('fetch failed', { cause: reset }))).toBe(true);
    expect(isNetworkFailure(new Error('wrapped', { cause: reset }))).toBe(true);
    expect(isNetworkFailure(new Error('bad request'))).toBe(false);
  });

  it('reads retry-after as seconds or a date, and retry-after-ms first', () => {
    expect(parseRetryAfterMs('2')).toBe(2000);
    expect(parseRetryAfterMs('nonsense')).toBeUndefined();
    expect(parseRetryAfterMs(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(50_000);
    expect(retryAfterMsOf(new Headers({ 'retry-after-ms': '150', 'retry-after': '9' }))).toBe(150);
    expect(retryAfterMsOf(new Headers({ 'retry-after': '3' }))).toBe(3000);
    expect(retryAfterMsOf(new Headers())).toBeUndefined();
  });

  it('waits the server’s hint capped by maxBackoffMs, else full jitter under a doubling ceiling', () => {
    const policy = resolveRetryPolicy({ initialBackoffMs: 100, maxBackoffMs: 1000 });
    expect(backoffMs(policy, 1, 5000)).toBe(1000);
    expect(backoffMs(policy, 1, 20)).toBe(20);
    for (let i = 0; i < 50; i++) {
      expect(backoffMs(policy, 1, undefined)).toBeLessThanOrEqual(100);
      expect(backoffMs(policy, 10, undefined)).toBeLessThanOrEqual(1000);
    }
  });
});

describe('callWithRetries', () => {
  const transient: AttemptFailure = { transient: true, status: 503, reason: 'overloaded' };

  it('retries transient failures up to maxAttempts, then throws a retryable MODEL_ERROR naming provider and model', async () => {
    let attempts = 0;
    const err = await callWithRetries({
      provider: 'Acme',
      model: 'm1',
      policy: fast,
      attempt: () => {
        attempts++;
        return Promise.reject(new Error('boom'));
      },
      describe: () => transient,
    }).catch((e: unknown) => e as AgentloomError);
    expect(attempts).toBe(3);
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.message).toBe("Acme model 'm1' failed with HTTP 503 after 3 attempts: overloaded");
  });

  it('passes an AgentloomError of the attempt on untouched and unretried', async () => {
    let attempts = 0;
    const own = new AgentloomError('MODEL_ERROR', 'malformed');
    const err = await callWithRetries({
      provider: 'Acme',
      model: 'm1',
      policy: fast,
      attempt: () => {
        attempts++;
        return Promise.reject(own);
      },
      describe: () => transient,
    }).catch((e: unknown) => e);
    expect(err).toBe(own);
    expect(attempts).toBe(1);
  });

  it('starts every attempt through the lease check, and a fenced check stops it before it sends', async () => {
    const sent: number[] = [];
    let checks = 0;
    let fenced = false;
    const err = await callWithRetries({
      provider: 'Acme',
      model: 'm1',
      policy: fast,
      sendLeased: (send) => {
        checks++;
        if (fenced) return Promise.reject(new AgentloomError('FENCED', 'another worker took over'));
        fenced = true; // the worker froze during the backoff and another took its step over
        return send();
      },
      attempt: (n) => {
        sent.push(n);
        return Promise.reject(new Error('boom'));
      },
      describe: () => transient,
    }).catch((e: unknown) => e as AgentloomError);
    expect(checks).toBe(2);
    expect(sent).toEqual([1]);
    expect(err.code).toBe('FENCED');
  });

  it('is CANCELLED when the signal aborts while it waits between attempts', async () => {
    const controller = new AbortController();
    const pending = callWithRetries({
      provider: 'Acme',
      model: 'm1',
      policy: resolveRetryPolicy({ maxAttempts: 5, maxBackoffMs: 60_000 }),
      signal: controller.signal,
      attempt: () => Promise.reject(new Error('busy')),
      describe: () => ({ ...transient, retryAfterMs: 30_000 }),
    }).catch((e: unknown) => e as AgentloomError);
    setTimeout(() => controller.abort(), 10);
    const err = await pending;
    expect(err.code).toBe('CANCELLED');
    expect(err.message).toContain("Acme model 'm1'");
  });

  it('redacts secrets from the message and the cause', async () => {
    const err = await callWithRetries({
      provider: 'Acme',
      model: 'm1',
      policy: fast,
      secrets: ['sk-secret'],
      attempt: () => Promise.reject(new Error('key sk-secret refused')),
      describe: () => ({ transient: false, status: 401, reason: 'key sk-secret refused' }),
    }).catch((e: unknown) => e as AgentloomError);
    expect(err.message).toContain('key [redacted] refused');
    expect((err.cause as Error).message).not.toContain('sk-secret');
  });
});

describe('chat conversion helpers', () => {
  it('pairs id-less calls and responses by name, in order, keeping given ids', () => {
    const ids = new CallIdPairing();
    const a = ids.callId({ name: 'search', args: {} });
    const b = ids.callId({ name: 'search', args: {} });
    const c = ids.callId({ id: 'given', name: 'fetch', args: {} });
    expect(new Set([a, b, c]).size).toBe(3);
    expect(c).toBe('given');
    expect(ids.responseId({ name: 'search', response: {} })).toBe(a);
    expect(ids.responseId({ id: 'given', name: 'fetch', response: {} })).toBe('given');
    expect(ids.responseId({ name: 'search', response: {} })).toBe(b);
  });

  it('merges neighbouring contents of one role, keeping part order', () => {
    const merged = mergeSameRoleContents([
      { role: 'user', parts: [{ text: 'a' }] },
      { role: 'user', parts: [{ text: 'b' }] },
      { role: 'model', parts: [{ text: 'c' }] },
      { role: 'user', parts: [{ text: 'd' }] },
    ]);
    expect(merged).toEqual([
      { role: 'user', parts: [{ text: 'a' }, { text: 'b' }] },
      { role: 'model', parts: [{ text: 'c' }] },
      { role: 'user', parts: [{ text: 'd' }] },
    ]);
  });

  it('reads generation settings under Gemini’s names first, then the providers’, ignoring wrong types', () => {
    expect(
      readGenerationSettings({ temperature: '0.5', topP: 0.8, top_p: 0.1, max_tokens: 99, stop: 'END' }),
    ).toEqual({ topP: 0.8, maxTokens: 99, stopSequences: ['END'] });
  });

  it('parses tool arguments: empty text is no arguments, a non-object is a MODEL_ERROR', () => {
    const ctx = { provider: 'Acme', model: 'm1', tool: 'search' };
    expect(parseToolArguments('', ctx)).toEqual({});
    expect(parseToolArguments('{"q":"x"}', ctx)).toEqual({ q: 'x' });
    expect(() => parseToolArguments('[1]', ctx)).toThrow(AgentloomError);
    expect(() => parseToolArguments('{"q":', ctx)).toThrow(/search/);
  });
});

describe('callWithRetries and a shared rate limiter', () => {
  const failing = (failure: AttemptFailure) => ({
    provider: 'OpenAI',
    model: 'gpt-test',
    policy: fast,
    attempt: (n: number) => (n === 1 ? Promise.reject(new Error('429')) : Promise.resolve('ok')),
    describe: () => failure,
  });

  it('tells onRateLimited of a 429 with retry-after, and lets what it throws through as it is', async () => {
    const told: number[] = [];
    const stop = new Error('wait for the rate limit');
    const err = await callWithRetries({
      ...failing({ transient: true, status: 429, retryAfterMs: 6000, reason: 'slow down' }),
      onRateLimited: (ms) => {
        told.push(ms);
        return Promise.reject(stop);
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(stop);
    expect(told).toEqual([6000]);
  });

  it('retries in place when the 429 carries no retry-after (or no limiter listens)', async () => {
    const told: number[] = [];
    const answer = await callWithRetries({
      ...failing({ transient: true, status: 429, reason: 'slow down' }),
      onRateLimited: (ms) => Promise.resolve(void told.push(ms)),
    });
    expect(answer).toBe('ok');
    expect(told).toEqual([]);
  });
});
