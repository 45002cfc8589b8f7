/**
 * The Model port: what an LlmAgent needs from a language model. Adapters: `Gemini` (over @google/genai),
 * `OpenAIModel` (over openai: OpenAI, Azure OpenAI, Ollama, vLLM), `AnthropicModel` (over @anthropic-ai/sdk) and
 * `ScriptedModel` (deterministic, offline: tests, examples and the demo).
 */
import type { Content } from '../core/content.js';

/** A JSON Schema object (the subset Gemini accepts for function parameters and response schemas). */
export type JsonSchema = Record<string, unknown>;

/** A tool as offered to the model. */
export interface ToolDeclaration {
  name: string;
  description: string;
  /** JSON Schema of the arguments object; omitted for tools without parameters. */
  parameters?: JsonSchema;
}

/** One model call. */
export interface ModelRequest {
  /** Model id for providers that serve several (e.g. 'gemini-2.5-flash'); adapters default to their own. */
  model?: string;
  /** The rendered system instruction (empty string when none). */
  systemInstruction: string;
  /** The conversation so far, oldest first, alternating as the provider needs. */
  contents: Content[];
  tools: ToolDeclaration[];
  /** When set, the model must answer with JSON matching this schema (no tools are offered then). */
  responseSchema?: JsonSchema;
  /** Provider-specific generation settings (temperature, maxOutputTokens, …), passed through. */
  generateContentConfig?: Record<string, unknown>;
  /** Aborts the call (cancellation of the invocation). */
  signal?: AbortSignal;
  /** Which agent is calling, its call index in this node activation, and the state it sees (ScriptedModel uses these). */
  agentName: string;
  callIndex: number;
  state: Record<string, unknown>;
}

/** Token accounting of one call, when the provider reports it. */
export interface ModelUsage {
  /** Input tokens, cached ones included (Anthropic: input + cache reads + cache writes). */
  promptTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  /**
   * The part of `promptTokens` served from the provider's prompt cache (Gemini cachedContentTokenCount, OpenAI
   * prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens).
   */
  cachedTokens?: number;
}

/** What a model answered. */
export interface ModelResponse {
  /** Role 'model'; text parts and/or function calls. */
  content: Content;
  finishReason?: string;
  usage?: ModelUsage;
}

/** Options of one {@link Model.generate} call. */
export interface GenerateOptions {
  /** When given, the adapter streams and calls this with each partial content (never stored). */
  onPartial?: (partial: Content) => void;
  /**
   * The engine's lease check (ARCHITECTURE "Zombie worker"): an adapter that retries, or that awaits anything of
   * its own before its HTTP request leaves, sends each attempt through it — `sendLeased(() => send())` — so a
   * worker frozen past its lease stops with FENCED instead of sending. Absent outside a step.
   */
  sendLeased?: <T>(send: () => Promise<T>) => Promise<T>;
  /**
   * The engine's shared rate limiter: an adapter calls it when the provider answers 429 with a
   * retry-after, before retrying; it may throw (the step then waits without holding its worker), and the error
   * must pass through as it is.
   */
  onRateLimited?: (retryAfterMs: number) => Promise<void>;
}

/** A language model. Implementations retry their own transient errors (429, 5xx, network) with backoff. */
export interface Model {
  /** A readable name for logs and errors ('gemini-2.5-flash', 'scripted'). */
  readonly name: string;
  /** Who serves it ('OpenAI', 'Azure OpenAI', 'Ollama', 'Anthropic', 'Gemini', …), for metrics and errors. */
  readonly provider?: string;
  generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse>;
}
