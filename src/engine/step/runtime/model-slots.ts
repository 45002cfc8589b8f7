/**
 * A step's slots of the shared model rate limits: taking one before a model call (or the
 * RateLimitWait that gives the step back), learning a provider's 429, settling on the usage, and releasing what a
 * stopped step left open. Used by node-runtime.ts; the limiter itself is src/queue/model-rate-limiter.ts.
 */
import { RateLimitWait, type ModelCallSlot } from '../../../agents/context.js';
import type { Model, ModelRequest, ModelResponse } from '../../../models/model.js';
import type { ModelRateLimiter, RateLimitSlot } from '../../../queue/model-rate-limiter.js';

/** The rate-limit slots of one step attempt. */
export class ModelSlots {
  /** Taken by model calls of this step and not settled yet. */
  private readonly open = new Set<RateLimitSlot>();

  /**
   * A slot for `request` to model `ref` (limited by the name the agent gives it: `openai/gpt-4.1`, a registered
   * name, or a model instance's `name`), or throws {@link RateLimitWait}.
   */
  async acquire(
    limiter: ModelRateLimiter,
    request: ModelRequest,
    ref: Model | string | undefined,
    app: string,
  ): Promise<ModelCallSlot> {
    const model = typeof ref === 'string' ? ref : (ref?.name ?? 'default');
    const got = await limiter.acquire(model, estimateTokens(request), app);
    if (!got.ok) throw new RateLimitWait(model, got.waitMs, got.limit, got.reason);
    const taken = got.slot;
    this.open.add(taken);
    return {
      onRateLimited: async (retryAfterMs) => {
        await limiter.learnRetryAfter(model, retryAfterMs);
        await this.settle(taken, undefined);
        throw new RateLimitWait(model, retryAfterMs, model, 'retry-after');
      },
      settle: (response?: ModelResponse) => this.settle(taken, usedTokens(response)),
    };
  }

  /** Gives back the slots of calls that never settled (the step stopped mid-call). Never throws. */
  async release(): Promise<void> {
    const open = [...this.open];
    this.open.clear();
    await Promise.all(open.map((slot) => slot.settle(undefined).catch(() => undefined)));
  }

  private async settle(slot: RateLimitSlot, tokens: number | undefined): Promise<void> {
    this.open.delete(slot);
    await slot.settle(tokens);
  }
}

/**
 * A model call's tokens before it is sent, to reserve against a tokens-per-minute limit (settled on the usage
 * after): about 4 characters a token over the instruction, history and tools, plus the output ceiling asked for.
 */
export function estimateTokens(request: ModelRequest): number {
  const chars =
    request.systemInstruction.length +
    JSON.stringify(request.contents).length +
    (request.tools.length > 0 ? JSON.stringify(request.tools).length : 0);
  const config = request.generateContentConfig ?? {};
  const output = Number(config.maxOutputTokens ?? config.max_tokens ?? config.maxTokens ?? 0);
  return Math.ceil(chars / 4) + (Number.isFinite(output) && output > 0 ? output : 0);
}

/** The tokens a response used, when the provider said. */
function usedTokens(response: ModelResponse | undefined): number | undefined {
  const usage = response?.usage;
  if (!usage) return undefined;
  return usage.totalTokens ?? (usage.promptTokens ?? 0) + (usage.outputTokens ?? 0);
}
