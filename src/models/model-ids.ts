/**
 * Model ids as ADK users write them for LiteLLM (`openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`,
 * `ollama/llama3.2`, `azure/<deployment>`) or for Gemini (`gemini-2.5-flash`), and the adapter each one means.
 * Pure and light (no SDK is loaded): the config layer checks ids with it; model-factory.ts builds the adapters.
 */

/** The providers a model id can name. */
export type ModelProvider = 'openai' | 'azure' | 'anthropic' | 'ollama' | 'gemini';

/** A recognised model id: the provider and the provider's own model (or Azure deployment) name. */
export interface ParsedModelId {
  provider: ModelProvider;
  model: string;
}

/** The environment variables `createModelForId` (model-factory.ts) reads (the config layer passes its parsed env). */
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
