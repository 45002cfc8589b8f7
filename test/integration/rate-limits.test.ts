/**
 * Rate limits of model calls in the step flow (one engine; test/e2e/distributed/rate-limits.test.ts runs three worker
 * processes): a model call that must wait gives back its worker and its lease — the node shows the wait, another
 * app's step runs on the one worker slot meanwhile — and runs again after the wait without repeating any model or
 * tool call it had made; a provider's 429 with retry-after makes every step of that model wait, sending nothing.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FunctionTool, LlmAgent, ScriptedModel, type Engine } from '../../src/index.js';
import { backends, engineOn } from '../support/services/engines.js';
import { chatCompletion, openaiError, startOpenAIWire } from '../support/wire/openai-wire.js';
import { waitFor } from '../support/assert/wait-for.js';

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** A pino logger whose lines the test reads. */
function capturedLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

describe.each(backends)('rate limits in the step flow on $name', (backend) => {
  it('a step that must wait holds no worker and no lease, shows its wait, and repeats no call', async () => {
    const calls: number[] = [];
    let toolRuns = 0;
    const limited = new ScriptedModel({
      respond: (turn) => {
        calls.push(Date.now());
        return turn.callIndex === 0 ? { functionCalls: [{ name: 'lookup', args: {} }] } : 'looked up';
      },
    });
    const lookup = new FunctionTool({ name: 'lookup', description: 'l', execute: () => ({ n: ++toolRuns }) });
    const { logger, lines } = capturedLogger();
    const engine = await engineOn(backend, {
      apps: [
        { name: 'slow', agent: new LlmAgent({ name: 'asker', model: 'limited', tools: [lookup] }) },
        { name: 'other', agent: new LlmAgent({ name: 'answerer', model: 'free' }) },
      ],
      models: { limited, free: new ScriptedModel({ respond: () => 'free answer' }) },
      // 6/min: one call per 10 s window, so the agent's second call waits ~10 s.
      rateLimits: { limited: { requestsPerMinute: 6 } },
      // One worker slot: the other app can only run if the waiting step gave it back.
      worker: { concurrency: 1 },
      logger,
    });
    engines.push(engine);
    const slow = await engine.enqueue({ app: 'slow', userId: 'u', input: 'go' });
    const parked = await waitFor(
      async () => (await engine.nodes(slow.invocationId)).find((n) => n.waiting !== null),
      { timeoutMs: 20_000, intervalMs: 50, what: 'the step to wait for its rate limit' },
    );
    expect(parked.status).toBe('running');
    expect(parked.waiting).toMatchObject({ kind: 'rate_limit', model: 'limited', limit: 'limited' });
    expect(parked.waiting!.until.getTime()).toBeGreaterThan(Date.now());
    // Its lease is released: no worker holds it.
    expect(parked.leaseExpiresAt!.getTime()).toBeLessThanOrEqual(Date.now());
    const other = await engine.enqueue({ app: 'other', userId: 'u', input: 'hi' });
    const otherDone = await engine.wait(other.invocationId, { timeoutMs: 30_000 });
    expect(otherDone.status).toBe('completed');
    expect((await engine.get(slow.invocationId)).status).toBe('running');
    const done = await engine.wait(slow.invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('looked up');
    // Two model calls and one tool run in all: the wait repeated nothing (the journal replayed the first call).
    expect(calls).toHaveLength(2);
    expect(toolRuns).toBe(1);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(9_000);
    // Counted once each against the budget.
    expect(done.llmCalls).toBe(2);
    expect(
      lines.some((l) => typeof l.msg === 'string' && /^waiting for rate limit: limited, ~\d+ s$/.test(l.msg)),
    ).toBe(true);
    // After the wait, the view no longer shows it.
    expect((await engine.nodes(slow.invocationId)).every((n) => n.waiting === null)).toBe(true);
  });

  it("a provider's 429 with retry-after makes every step of that model wait without sending", async () => {
    const wire = await startOpenAIWire({ fallback: () => chatCompletion({ text: 'ok' }) });
    try {
      wire.reply(
        openaiError(429, 'slow down', { type: 'rate_limit_error', headers: { 'retry-after': '3' } }),
      );
      const engine = await engineOn(backend, {
        apps: [{ name: 'app', agent: new LlmAgent({ name: 'a', model: 'openai/gpt-4.1' }) }],
        modelEnv: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${wire.url}/v1` },
        rateLimits: { 'openai/gpt-4.1': { requestsPerMinute: 6000 } },
        worker: { concurrency: 4 },
      });
      engines.push(engine);
      const first = await engine.enqueue({ app: 'app', userId: 'u', input: 'one' });
      await waitFor(() => wire.count >= 1, { what: 'the first call' });
      const at429 = Date.now();
      const more = await Promise.all(
        [1, 2, 3].map((i) => engine.enqueue({ app: 'app', userId: 'u', input: `more ${i}` })),
      );
      for (const id of [first, ...more].map((r) => r.invocationId)) {
        expect((await engine.wait(id, { timeoutMs: 60_000 })).status).toBe('completed');
      }
      // 1 refused + 4 answered, and none of the 4 sent before the retry-after ran out: the other runs' steps
      // (not only the one that got the 429) waited for it.
      expect(wire.count).toBe(5);
      const refusedAt = wire.requests[0]!.at;
      expect(refusedAt).toBeLessThanOrEqual(at429);
      for (const r of wire.requests.slice(1)) expect(r.at - refusedAt).toBeGreaterThanOrEqual(2_500);
      // The agent names the model by its provider id; the wire gets OpenAI's own model id.
      expect(new Set(wire.requests.map((r) => (r.body as { model?: unknown }).model))).toEqual(
        new Set(['gpt-4.1']),
      );
    } finally {
      await wire.close();
    }
  });
});
