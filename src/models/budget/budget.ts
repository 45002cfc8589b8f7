/**
 * Budgets of model spending (issue 35): the limits, what a run has spent, and the check made before each model
 * call. Pure arithmetic, shared by every layer that holds a budget (an app, one invocation, an agent's subtree).
 *
 * The rule: a call starts only if what is spent plus the call's reservation stays within every limit. The
 * reservation is the largest usage of that agent's calls so far in the run; for its first call, the request's
 * estimated input tokens plus its `maxOutputTokens` (or {@link DEFAULT_OUTPUT_RESERVATION}). So a loop whose calls
 * cost 150 tokens each stops after 6 calls under a budget of 1,000, never at 1,050.
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

/** The error of `onExceeded: 'fail'`: names the limit and how to raise it. */
export function budgetExceeded(crossing: BudgetCrossing): AgentloomError {
  return new AgentloomError(
    'BUDGET_EXCEEDED',
    `the next model call would cross budget.${crossing.limit} (${crossing.spent} spent + ${crossing.reserved} reserved > ${crossing.max}); raise budget.${crossing.limit}, or use onExceeded: 'pause' to be asked`,
    { details: { ...crossing } },
  );
}
