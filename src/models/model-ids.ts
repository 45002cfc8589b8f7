/**
 * Model ids as ADK users write them for LiteLLM (`openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`,
 * `ollama/llama3.2`, `azure/<deployment>`) or for Gemini (`gemini-2.5-flash`), and the adapter each one means.
 * Pure: the environment is passed in by the config layer, never read here.
 */
import { AgentloomError } from '../core/errors.js';
import { AnthropicModel } from './anthropic.js';
import { Gemini } from './gemini.js';
import type { Model } from './model.js';
import { OpenAIModel } from './openai.js';

/** The providers a model id can name. */
export type ModelProvider = 'openai' | 'azure' | 'anthropic' | 'ollama' | 'gemini';

/** A recognised model id: the provider and the provider's own model (or Azure deployment) name. */
export interface ParsedModelId {
  provider: ModelProvider;
  model: string;
}

/** The environment variables {@link createModelForId} reads (the config layer passes its parsed env). */
export interface ModelEnv {
  OPENAI_API_KEY?: string | undefined;
  OPENAI_BASE_URL?: string | undefined;
  ANTHROPIC_API_KEY?: string | undefined;
  ANTHROPIC_BASE_URL?: string | undefined;
  AZURE_OPENAI_API_KEY?: string | undefined;
  AZURE_OPENAI_ENDPOINT?: string | undefined;
  OPENAI_API_VERSION?: string | undefined;
  /** Ollama's address, e.g. 'http://localhost:11434' (its own variable; '/v1' is appended). */
  OLLAMA_HOST?: string | undefined;
  GEMINI_API_KEY?: string | undefined;
  /** Gemini's fallback key variable. */
  GOOGLE_API_KEY?: string | undefined;
}

/** LiteLLM's provider prefixes we serve (`ollama_chat/` is LiteLLM's chat-endpoint flavour of Ollama). */
const PREFIXES: Readonly<Record<string, ModelProvider>> = {
  openai: 'openai',
  azure: 'azure',
  anthropic: 'anthropic',
  ollama: 'ollama',
  ollama_chat: 'ollama',
  gemini: 'gemini',
};

/**
 * Recognises `<provider>/<model>` with a prefix of openai, azure, anthropic, ollama, ollama_chat or gemini
 * (the model may hold further slashes and colons: `ollama/hf.co/org/model:q4`), and a bare `gemini-…` id.
 * Anything else (an unknown prefix, a bare non-Gemini id, an empty model) → undefined.
 */
export function parseModelId(id: string): ParsedModelId | undefined {
  const trimmed = id.trim();
  const slash = trimmed.indexOf('/');
  if (slash < 0) return /^gemini-/.test(trimmed) ? { provider: 'gemini', model: trimmed } : undefined;
  const provider = PREFIXES[trimmed.slice(0, slash)];
  const model = trimmed.slice(slash + 1);
  return provider === undefined || model === '' ? undefined : { provider, model };
}

/** The variable holding each provider's key (Ollama needs none). */
const KEY_VARIABLES: Readonly<Record<ModelProvider, keyof ModelEnv | undefined>> = {
  openai: 'OPENAI_API_KEY',
  azure: 'AZURE_OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  ollama: undefined,
  gemini: 'GEMINI_API_KEY',
};

/**
 * The name of the environment variable to set because the key that `id` needs is missing from `env`
 * (GEMINI_API_KEY is satisfied by GOOGLE_API_KEY too); undefined when the key is there, when the provider needs
 * none (Ollama), or when `id` is not recognised (see {@link parseModelId}).
 */
export function missingKeyVariable(id: string, env: ModelEnv): string | undefined {
  const parsed = parseModelId(id);
  if (!parsed) return undefined;
  const variable = KEY_VARIABLES[parsed.provider];
  if (variable === undefined || env[variable]) return undefined;
  if (parsed.provider === 'gemini' && env.GOOGLE_API_KEY) return undefined;
  return variable;
}

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
      return new OpenAIModel({
        model,
        apiKey: 'ollama',
        baseURL: ollamaBaseURL(env.OLLAMA_HOST),
        maxTokensField: 'max_tokens',
        provider: 'Ollama',
      });
    case 'gemini':
      return new Gemini({ model, apiKey: env.GEMINI_API_KEY || env.GOOGLE_API_KEY });
  }
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
