/**
 * A model with generation settings of its own (a kagent ModelConfig's temperature, maxTokens, …): they apply to
 * every call, under what the agent's `generateContentConfig` sets.
 */
import type { GenerateOptions, Model, ModelRequest, ModelResponse } from './model.js';

/** `model` with `defaults` (generateContentConfig keys) merged under each request's own settings. */
export function withGenerationDefaults(model: Model, defaults: Record<string, unknown>): Model {
  return {
    name: model.name,
    ...(model.provider !== undefined ? { provider: model.provider } : {}),
    generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
      return model.generate(
        { ...request, generateContentConfig: { ...defaults, ...request.generateContentConfig } },
        options,
      );
    },
  };
}
