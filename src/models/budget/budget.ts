/**
 * Budgets of model spending: the limits, what a run has spent, and the check made before each model
 * call. Pure arithmetic, shared by every layer that holds a budget (an app, one invocation, an agent's subtree).
 *
 * The rule: a call starts only if what is spent plus the call's reservation stays within every limit. The
 * reservation is the largest usage of that agent's calls so far in the run; for its first call, the request's
 * estimated input tokens plus its `maxOutputTokens` (or {@link DEFAULT_OUTPUT_RESERVATION}). So a loop whose calls
 * cost 150 tokens each stops after 6 calls under a budget of 1,000, never at 1,050. A call whose reservation does
 * not fit but for which at least {@link MIN_OUTPUT_TOKENS} output tokens are left ({@link outputRoom}) is made with
 * its output limit lowered to what is left, so the provider itself keeps it within the budget.
 */
import { AgentloomError } from '../../core/errors.js';
import type { ModelUsage } from '../model.js';
import { costOfUsage, type ModelPrice } from './pricing.js';

/** The limits of a budget; each is optional (absent: no limit). */
export interface Budget {
  tokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  modelCalls?: number;
  /** Over budget: pause with a pending request of kind 'budget' (default) or fail with BUDGET_EXCEEDED. */
  onExceeded?: 'pause' | 'fail';
}

/** What was spent (or what one call reserves). */
export interface Spend {
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
}

/** The limit fields of a {@link Budget}. */
export const BUDGET_LIMITS = ['tokens', 'inputTokens', 'outputTokens', 'costUsd', 'modelCalls'] as const;
export type BudgetLimit = (typeof BUDGET_LIMITS)[number];

/** Output tokens reserved for an agent's first call when its request sets no `maxOutputTokens`. */
export const DEFAULT_OUTPUT_RESERVATION = 1024;

/**
 * The fewest output tokens a call is sent with when a budget lowers its output limit to what is left (32). A call
 * allowed fewer could hardly finish a sentence or a function call, yet would spend its input tokens: below this
 * floor the run pauses (or fails) on its budget instead.
 */
export const MIN_OUTPUT_TOKENS = 32;

export const ZERO_SPEND: Readonly<Spend> = {
  tokens: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  modelCalls: 0,
};

/** Checks a budget as written in code, YAML or the API; the error names the field and says what to write. */
export function validateBudget(value: unknown, field = 'budget'): Budget {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AgentloomError(
      'VALIDATION',
      `${field} must be an object such as { tokens: 100000, costUsd: 5, onExceeded: 'pause' }`,
      { details: { field } },
    );
  }
  const budget = value as Record<string, unknown>;
  for (const [key, v] of Object.entries(budget)) {
    const at = `${field}.${key}`;
    if (key === 'onExceeded') {
      if (v !== undefined && v !== 'pause' && v !== 'fail') {
        throw new AgentloomError('VALIDATION', `${at} must be 'pause' or 'fail'`, { details: { field: at } });
      }
      continue;
    }
    if (!(BUDGET_LIMITS as readonly string[]).includes(key)) {
      throw new AgentloomError(
        'VALIDATION',
        `${at} is not a budget field: use ${BUDGET_LIMITS.join(', ')} or onExceeded`,
        { details: { field: at } },
      );
    }
    if (v === undefined) continue;
    const integer = key !== 'costUsd';
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
      throw new AgentloomError(
        'VALIDATION',
        `${at} must be ${integer ? 'an integer' : 'a number'} ≥ 0 (omit it for no limit)`,
        { details: { field: at } },
      );
    }
  }
  return budget as Budget;
}

/** The spend of one call's usage at `price` (no price: tokens only, cost 0). */
export function spendOfUsage(usage: ModelUsage | undefined, price: ModelPrice | undefined): Spend {
  const inputTokens = usage?.promptTokens ?? 0;
  const outputTokens = usage?.outputTokens ?? 0;
  return {
    tokens: usage?.totalTokens ?? inputTokens + outputTokens,
    inputTokens,
    outputTokens,
    costUsd: price ? costOfUsage(usage, price) : 0,
    modelCalls: 1,
  };
}

/** `a + b`, field by field. */
export function addSpend(a: Spend, b: Spend): Spend {
  return {
    tokens: a.tokens + b.tokens,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    costUsd: a.costUsd + b.costUsd,
    modelCalls: a.modelCalls + b.modelCalls,
  };
}

/** The field-by-field maximum (the largest usage so far, per limit). */
export function maxSpend(a: Spend, b: Spend): Spend {
  return {
    tokens: Math.max(a.tokens, b.tokens),
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    costUsd: Math.max(a.costUsd, b.costUsd),
    modelCalls: 1,
  };
}

/** The `generateContentConfig` keys the provider adapters read as the output-token limit, first present wins. */
export const OUTPUT_LIMIT_KEYS = [
  'maxOutputTokens',
  'maxTokens',
  'max_tokens',
  'max_completion_tokens',
] as const;

/**
 * `config` with its output-token limit lowered to `limit`: `maxOutputTokens` (the key every adapter reads first:
 * Gemini sends it as it is, OpenAI as `max_completion_tokens` or `max_tokens`, Anthropic as `max_tokens`) and any
 * other spelling of it that is present, so no adapter sends a larger one.
 */
export function withMaxOutputTokens(
  config: Readonly<Record<string, unknown>> | undefined,
  limit: number,
): Record<string, unknown> {
  const lowered: Record<string, unknown> = { ...config };
  for (const key of OUTPUT_LIMIT_KEYS) if (key in lowered) lowered[key] = limit;
  lowered.maxOutputTokens = limit;
  return lowered;
}

/** A rough input-token estimate of a request's text (4 characters a token, the providers' rule of thumb). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * What the next call of an agent reserves: the largest usage of its calls so far in the run, or, for its first
 * call, `estimatedInputTokens` plus `maxOutputTokens` (default {@link DEFAULT_OUTPUT_RESERVATION}) priced at `price`.
 */
export function reservationFor(
  largestSoFar: Spend | undefined,
  first: { estimatedInputTokens: number; maxOutputTokens?: number | undefined; price?: ModelPrice },
): Spend {
  if (largestSoFar && largestSoFar.modelCalls > 0) return { ...largestSoFar, modelCalls: 1 };
  const outputTokens = first.maxOutputTokens ?? DEFAULT_OUTPUT_RESERVATION;
  return spendOfUsage(
    {
      promptTokens: first.estimatedInputTokens,
      outputTokens,
      totalTokens: first.estimatedInputTokens + outputTokens,
    },
    first.price,
  );
}

/** The first limit that `spent + reservation` would cross, with the figures a pending 'budget' request shows. */
export interface BudgetCrossing {
  limit: BudgetLimit;
  /** The budget's value of that limit. */
  max: number;
  spent: number;
  reserved: number;
}

/** undefined when the call may start; otherwise the limit it would cross. */
export function checkBudget(budget: Budget, spent: Spend, reservation: Spend): BudgetCrossing | undefined {
  for (const limit of BUDGET_LIMITS) {
    const max = budget[limit];
    if (max === undefined) continue;
    if (spent[limit] + reservation[limit] > max) {
      return { limit, max, spent: spent[limit], reserved: reservation[limit] };
    }
  }
  return undefined;
}

/**
 * How many output tokens a call may produce within `budget`, given what is `spent` and the call's `reservation`:
 * what is left of `tokens` after the reservation's input part (at least `inputTokens`, the request's estimate), of
 * `outputTokens`, and of `costUsd` at the output price of `price`. Infinity when no such limit is set; the limits
 * that output cannot lower (`inputTokens`, `modelCalls`) are left to {@link checkBudget}.
 */
export function outputRoom(
  budget: Budget,
  spent: Spend,
  reservation: Spend,
  options: { inputTokens: number; price?: ModelPrice | undefined },
): number {
  let room = Infinity;
  if (budget.tokens !== undefined) {
    const input = Math.max(reservation.tokens - reservation.outputTokens, options.inputTokens);
    room = Math.min(room, budget.tokens - spent.tokens - input);
  }
  if (budget.outputTokens !== undefined) room = Math.min(room, budget.outputTokens - spent.outputTokens);
  const perToken = (options.price?.outputPerMillion ?? 0) / 1_000_000;
  if (budget.costUsd !== undefined && perToken > 0) {
    const inputCost = Math.max(0, reservation.costUsd - reservation.outputTokens * perToken);
    room = Math.min(room, Math.floor((budget.costUsd - spent.costUsd - inputCost) / perToken));
  }
  return room;
}

/**
 * `reservation` with its output cut to `outputTokens` (a call sent with that output limit): its tokens and cost
 * lowered by the output it no longer reserves (priced at `price`), its input at least `inputTokens`.
 */
export function withOutputLimit(
  reservation: Spend,
  outputTokens: number,
  options: { inputTokens: number; price?: ModelPrice | undefined },
): Spend {
  const input = Math.max(reservation.tokens - reservation.outputTokens, options.inputTokens);
  const saved = Math.max(0, reservation.outputTokens - outputTokens);
  const perToken = (options.price?.outputPerMillion ?? 0) / 1_000_000;
  return {
    tokens: input + outputTokens,
    inputTokens: Math.max(reservation.inputTokens, options.inputTokens),
    outputTokens,
    costUsd: Math.max(0, reservation.costUsd - saved * perToken),
    modelCalls: 1,
  };
}

/** The error of `onExceeded: 'fail'`: names the limit and how to raise it. */
export function budgetExceeded(crossing: BudgetCrossing): AgentloomError {
  return new AgentloomError(
    'BUDGET_EXCEEDED',
    `the next model call would cross budget.${crossing.limit} (${crossing.spent} spent + ${crossing.reserved} reserved > ${crossing.max}); raise budget.${crossing.limit}, or use onExceeded: 'pause' to be asked`,
    { details: { ...crossing } },
  );
}
