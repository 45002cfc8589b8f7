/**
 * Builds the adapter a model id means (see model-ids.ts), from the keys and endpoints the config layer passes in;
 * the environment is never read here.
 */
import { AgentloomError } from '../../core/errors.js';
import { AnthropicModel } from './anthropic.js';
import { Gemini } from './gemini.js';
import type { Model } from '../model.js';
import { missingKeyVariable, parseModelId, type ModelEnv } from '../model-ids.js';
import { OpenAIModel } from './openai.js';

/**
 * The adapter for a model id, configured from `env`:
 * - `openai/<model>` → OpenAIModel (OPENAI_API_KEY; OPENAI_BASE_URL when set);
 * - `azure/<deployment>` → OpenAIModel on Azure (AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION);
 * - `anthropic/<model>` → AnthropicModel (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL when set);
 * - `ollama/<model>`, `ollama_chat/<model>` → OpenAIModel at `${OLLAMA_HOST ?? 'http://localhost:11434'}/v1`
 *   (http:// added when OLLAMA_HOST has no scheme) with the placeholder key 'ollama' and `max_tokens`;
 * - `gemini-…`, `gemini/<model>` → Gemini (GEMINI_API_KEY, else GOOGLE_API_KEY).
 * @throws AgentloomError `CONFIG` when the id is not recognised or a variable it needs is unset (the message
 *   names the variable).
 */
export function createModelForId(id: string, env: ModelEnv): Model {
  const parsed = parseModelId(id);
  if (!parsed) {
    throw new AgentloomError(
      'CONFIG',
      `Unknown model id '${id}': write gemini-<model>, or <provider>/<model> with a provider of openai, azure, ` +
        `anthropic or ollama (e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2).`,
      { details: { model: id } },
    );
  }
  const missing = missingKeyVariable(id, env);
  if (missing) throw needs(id, missing);
  const { provider, model } = parsed;
  switch (provider) {
    case 'openai':
      return new OpenAIModel({
        model,
        apiKey: env.OPENAI_API_KEY,
        baseURL: env.OPENAI_BASE_URL || undefined,
      });
    case 'azure': {
      if (!env.AZURE_OPENAI_ENDPOINT) throw needs(id, 'AZURE_OPENAI_ENDPOINT');
      if (!env.OPENAI_API_VERSION) throw needs(id, 'OPENAI_API_VERSION');
      const azure = {
        endpoint: env.AZURE_OPENAI_ENDPOINT,
        apiVersion: env.OPENAI_API_VERSION,
        deployment: model,
      };
      return new OpenAIModel({ model, apiKey: env.AZURE_OPENAI_API_KEY, azure });
    }
    case 'anthropic':
      return new AnthropicModel({
        model,
        apiKey: env.ANTHROPIC_API_KEY,
        baseURL: env.ANTHROPIC_BASE_URL || undefined,
      });
    case 'ollama':
      return ollamaModel(model, env.OLLAMA_HOST);
    case 'gemini':
      return new Gemini({ model, apiKey: env.GEMINI_API_KEY || env.GOOGLE_API_KEY });
  }
}

/**
 * A model served by Ollama at `host` (its OLLAMA_HOST form: 'http://localhost:11434' by default, a scheme
 * optional), through Ollama's OpenAI-compatible API: no key, `max_tokens`.
 */
export function ollamaModel(
  model: string,
  host: string | undefined,
  options: { defaultHeaders?: Record<string, string> } = {},
): OpenAIModel {
  return new OpenAIModel({
    ...options,
    model,
    apiKey: 'ollama',
    baseURL: ollamaBaseURL(host),
    maxTokensField: 'max_tokens',
    provider: 'Ollama',
  });
}

/** Ollama's OpenAI-compatible root: OLLAMA_HOST may lack a scheme ('0.0.0.0:11434', as Ollama itself allows). */
function ollamaBaseURL(host: string | undefined): string {
  const address = (host || 'http://localhost:11434').replace(/\/+$/, '');
  return `${/^https?:\/\//.test(address) ? address : `http://${address}`}/v1`;
}

function needs(id: string, variable: string): AgentloomError {
  return new AgentloomError('CONFIG', `Model '${id}' needs ${variable}: set it in the environment.`, {
    details: { model: id, variable },
  });
}
