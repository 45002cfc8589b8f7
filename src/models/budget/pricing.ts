/**
 * Model prices (USD per million tokens: input, output, cached input) and the cost of one call's usage. Defaults
 * cover the providers we ship, at their published list prices; `createEngine({ prices })`-style overrides win
 * (a provider changes its prices more often than we release). Pure: no SDK is loaded.
 */
import { AgentloomError } from '../../core/errors.js';
import type { ModelUsage } from '../model.js';
import { parseModelId } from '../model-ids.js';

/** What one model costs, in USD per million tokens. */
export interface ModelPrice {
  /** Uncached input tokens. */
  inputPerMillion: number;
  outputPerMillion: number;
  /** Input tokens served from the provider's prompt cache; default: `inputPerMillion`. */
  cachedInputPerMillion?: number;
}

/** Prices by model id (`openai/gpt-4.1`, `gemini-2.5-flash`, …). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** List prices of the models we ship adapters for (override them with your contract's prices). */
export const DEFAULT_PRICES: PriceTable = {
  'openai/gpt-4.1': { inputPerMillion: 2, outputPerMillion: 8, cachedInputPerMillion: 0.5 },
  'openai/gpt-4.1-mini': { inputPerMillion: 0.4, outputPerMillion: 1.6, cachedInputPerMillion: 0.1 },
  'openai/gpt-4.1-nano': { inputPerMillion: 0.1, outputPerMillion: 0.4, cachedInputPerMillion: 0.025 },
  'openai/gpt-4o': { inputPerMillion: 2.5, outputPerMillion: 10, cachedInputPerMillion: 1.25 },
  'openai/gpt-4o-mini': { inputPerMillion: 0.15, outputPerMillion: 0.6, cachedInputPerMillion: 0.075 },
  'anthropic/claude-opus-4-1': { inputPerMillion: 15, outputPerMillion: 75, cachedInputPerMillion: 1.5 },
  'anthropic/claude-sonnet-4-5': { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 },
  'anthropic/claude-haiku-4-5': { inputPerMillion: 1, outputPerMillion: 5, cachedInputPerMillion: 0.1 },
  'gemini-2.5-pro': { inputPerMillion: 1.25, outputPerMillion: 10, cachedInputPerMillion: 0.31 },
  'gemini-2.5-flash': { inputPerMillion: 0.3, outputPerMillion: 2.5, cachedInputPerMillion: 0.075 },
  'gemini-2.5-flash-lite': { inputPerMillion: 0.1, outputPerMillion: 0.4, cachedInputPerMillion: 0.025 },
};

const FREE: ModelPrice = { inputPerMillion: 0, outputPerMillion: 0, cachedInputPerMillion: 0 };

/**
 * The price of `modelId`: the override, else the default, else free for a local Ollama model; undefined when
 * unknown (its calls then count tokens but no cost; a `costUsd` budget names the model to price).
 */
export function priceFor(modelId: string, overrides: PriceTable = {}): ModelPrice | undefined {
  const id = modelId.trim();
  const own = overrides[id] ?? DEFAULT_PRICES[id];
  if (own) return own;
  return parseModelId(id)?.provider === 'ollama' ? FREE : undefined;
}

/** The USD cost of one call's usage at `price` (cached input at its own rate). */
export function costOfUsage(usage: ModelUsage | undefined, price: ModelPrice): number {
  const prompt = usage?.promptTokens ?? 0;
  const cached = Math.min(usage?.cachedTokens ?? 0, prompt);
  const output = usage?.outputTokens ?? 0;
  const cachedRate = price.cachedInputPerMillion ?? price.inputPerMillion;
  return (
    ((prompt - cached) * price.inputPerMillion + cached * cachedRate + output * price.outputPerMillion) / 1e6
  );
}

/** Checks a price-table override; the error names the model and field and says what to write. */
export function validatePriceTable(value: unknown, field = 'prices'): PriceTable {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AgentloomError(
      'VALIDATION',
      `${field} must be an object of model id → { inputPerMillion, outputPerMillion, cachedInputPerMillion? }`,
      {
        details: { field },
      },
    );
  }
  for (const [id, price] of Object.entries(value as Record<string, unknown>)) {
    const at = `${field}["${id}"]`;
    if (typeof price !== 'object' || price === null) {
      throw new AgentloomError(
        'VALIDATION',
        `${at} must be { inputPerMillion, outputPerMillion, cachedInputPerMillion? } (USD per million tokens)`,
        {
          details: { field: at },
        },
      );
    }
    const p = price as Record<string, unknown>;
    for (const key of Object.keys(p)) {
      if (!['inputPerMillion', 'outputPerMillion', 'cachedInputPerMillion'].includes(key)) {
        throw new AgentloomError(
          'VALIDATION',
          `${at}.${key} is not a price field: use inputPerMillion, outputPerMillion or cachedInputPerMillion`,
          {
            details: { field: `${at}.${key}` },
          },
        );
      }
    }
    for (const key of ['inputPerMillion', 'outputPerMillion', 'cachedInputPerMillion'] as const) {
      const v = p[key];
      if (v === undefined && key === 'cachedInputPerMillion') continue;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new AgentloomError('VALIDATION', `${at}.${key} must be a number ≥ 0 (USD per million tokens)`, {
          details: { field: `${at}.${key}` },
        });
      }
    }
  }
  return value as PriceTable;
}
