/** Budgets of model spending, the pure part: validation, prices, the reservation rule and the check before each call. */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import {
  addSpend,
  budgetExceeded,
  checkBudget,
  costOfUsage,
  maxSpend,
  MIN_OUTPUT_TOKENS,
  outputRoom,
  priceFor,
  reservationFor,
  spendOfUsage,
  validateBudget,
  validatePriceTable,
  withMaxOutputTokens,
  withOutputLimit,
  ZERO_SPEND,
  type Spend,
} from '../../src/models/index.js';

function fieldOf(build: () => unknown): unknown {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(AgentloomError);
    expect((err as AgentloomError).code).toBe('VALIDATION');
    return (err as AgentloomError).details?.field;
  }
  throw new Error('expected a validation error');
}

/** Runs a loop of calls of `perCall` tokens under `budget`; returns how many started and the total spent. */
function loop(budgetTokens: number, perCall: { input: number; output: number }, maxOutputTokens: number) {
  let spent: Spend = ZERO_SPEND;
  let largest: Spend | undefined;
  let calls = 0;
  for (;;) {
    const reservation = reservationFor(largest, { estimatedInputTokens: perCall.input, maxOutputTokens });
    const crossing = checkBudget({ tokens: budgetTokens }, spent, reservation);
    if (crossing) return { calls, spent, crossing };
    const used = spendOfUsage({ promptTokens: perCall.input, outputTokens: perCall.output }, undefined);
    spent = addSpend(spent, used);
    largest = largest ? maxSpend(largest, used) : used;
    calls += 1;
  }
}

describe('budget', () => {
  it('stops a loop of 150-token calls after 6 under a budget of 1,000, never at 1,050', () => {
    const { calls, spent, crossing } = loop(1000, { input: 100, output: 50 }, 50);
    expect(calls).toBe(6);
    expect(spent.tokens).toBe(900);
    expect(crossing).toEqual({ limit: 'tokens', max: 1000, spent: 900, reserved: 150 });
  });

  it('reserves the first call as estimated input plus maxOutputTokens (default 1024)', () => {
    expect(reservationFor(undefined, { estimatedInputTokens: 10, maxOutputTokens: 90 }).tokens).toBe(100);
    expect(reservationFor(undefined, { estimatedInputTokens: 10 }).tokens).toBe(1034);
    // a first call whose estimate alone crosses the budget does not start
    expect(loop(500, { input: 10, output: 10 }, 1024).calls).toBe(0);
  });

  it('gives a call that does not fit the output what is left of tokens, outputTokens and cost', () => {
    const first = reservationFor(undefined, { estimatedInputTokens: 10 });
    const opts = { inputTokens: 10 };
    expect(outputRoom({ tokens: 1000 }, ZERO_SPEND, first, opts)).toBe(990);
    expect(outputRoom({ outputTokens: 120, tokens: 5000 }, ZERO_SPEND, first, opts)).toBe(120);
    expect(outputRoom({ inputTokens: 5, modelCalls: 1 }, ZERO_SPEND, first, opts)).toBe(Infinity);
    const price = priceFor('openai/gpt-4.1')!;
    const priced = reservationFor(undefined, { estimatedInputTokens: 10, price });
    // $0.001 less 10 input tokens at $2/M, at $8/M output.
    expect(outputRoom({ costUsd: 0.001 }, ZERO_SPEND, priced, { ...opts, price })).toBe(122);
    // A later call reserves the largest so far; the input part is at least the request's estimate.
    const largest = spendOfUsage({ promptTokens: 100, outputTokens: 50 }, undefined);
    const spent = { ...ZERO_SPEND, tokens: 850 };
    expect(outputRoom({ tokens: 1000 }, spent, largest, { inputTokens: 20 })).toBe(50);
    expect(outputRoom({ tokens: 1000 }, spent, largest, { inputTokens: 120 })).toBe(30);
    expect(withOutputLimit(largest, 40, { inputTokens: 20 })).toMatchObject({
      tokens: 140,
      outputTokens: 40,
    });
    expect(MIN_OUTPUT_TOKENS).toBeGreaterThan(0);
  });

  it("lowers every spelling of a request's output limit", () => {
    expect(withMaxOutputTokens(undefined, 50)).toEqual({ maxOutputTokens: 50 });
    expect(withMaxOutputTokens({ temperature: 0, max_tokens: 900 }, 50)).toEqual({
      temperature: 0,
      max_tokens: 50,
      maxOutputTokens: 50,
    });
  });

  it('checks every limit: cost, input, output and model calls', () => {
    const price = priceFor('openai/gpt-4.1')!;
    const one = spendOfUsage({ promptTokens: 1_000_000, outputTokens: 0 }, price);
    expect(one.costUsd).toBeCloseTo(2);
    expect(checkBudget({ costUsd: 3 }, one, one)?.limit).toBe('costUsd');
    expect(checkBudget({ costUsd: 4 }, one, one)).toBeUndefined();
    expect(checkBudget({ modelCalls: 2 }, addSpend(one, one), one)?.limit).toBe('modelCalls');
    expect(checkBudget({ outputTokens: 0, inputTokens: 5_000_000 }, one, one)).toBeUndefined();
    const err = budgetExceeded(checkBudget({ inputTokens: 1_500_000 }, one, one)!);
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.message).toContain('budget.inputTokens');
  });

  it('rejects bad budgets naming the field', () => {
    expect(fieldOf(() => validateBudget({ tokens: -1 }))).toBe('budget.tokens');
    expect(fieldOf(() => validateBudget({ tokens: 1.5 }))).toBe('budget.tokens');
    expect(fieldOf(() => validateBudget({ costUSD: 1 }))).toBe('budget.costUSD');
    expect(fieldOf(() => validateBudget({ onExceeded: 'stop' }, 'apps.a.budget'))).toBe(
      'apps.a.budget.onExceeded',
    );
    expect(fieldOf(() => validateBudget(5))).toBe('budget');
    expect(validateBudget({ costUsd: 0.5, modelCalls: 3, onExceeded: 'fail' })).toEqual({
      costUsd: 0.5,
      modelCalls: 3,
      onExceeded: 'fail',
    });
  });
});

describe('prices', () => {
  it('defaults, overrides, free Ollama, unknown models', () => {
    expect(priceFor('anthropic/claude-sonnet-4-5')?.outputPerMillion).toBe(15);
    expect(
      priceFor('openai/gpt-4.1', { 'openai/gpt-4.1': { inputPerMillion: 1, outputPerMillion: 2 } }),
    ).toEqual({
      inputPerMillion: 1,
      outputPerMillion: 2,
    });
    expect(priceFor('ollama/llama3.2')?.inputPerMillion).toBe(0);
    expect(priceFor('openai/some-future-model')).toBeUndefined();
  });

  it('prices cached input at its own rate', () => {
    const price = { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 };
    // 600k uncached × $2 + 400k cached × $0.5 + 100k output × $8 = 1.2 + 0.2 + 0.8
    expect(
      costOfUsage({ promptTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000 }, price),
    ).toBeCloseTo(2.2);
  });

  it('rejects bad price tables naming the field', () => {
    expect(fieldOf(() => validatePriceTable({ m: { inputPerMillion: 1 } }))).toBe(
      'prices["m"].outputPerMillion',
    );
    expect(
      fieldOf(() => validatePriceTable({ m: { inputPerMillion: 1, outputPerMillion: 1, input: 2 } })),
    ).toBe('prices["m"].input');
    expect(fieldOf(() => validatePriceTable([]))).toBe('prices');
  });
});
