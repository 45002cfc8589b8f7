/**
 * What the chat adapters (OpenAI, Anthropic) share when converting a request and its answer: the generation
 * settings of `generateContentConfig`, same-role merging, call-id pairing, and reading a call's JSON arguments.
 *
 * `generateContentConfig` is written for Gemini, in camelCase: each setting is looked up under Gemini's name
 * first, then the providers' own names, so an ADK agent's `generate_content_config` carries over. A setting of
 * the wrong type is ignored rather than sent.
 */
import type { Content, Part } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';

/** The generation settings both chat adapters understand, provider-neutral. */
export interface GenerationSettings {
  temperature?: number;
  topP?: number;
  topK?: number;
  /** Upper bound of generated tokens. */
  maxTokens?: number;
  stopSequences?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
}

/** The first of `keys` in `config` whose value is a finite number. */
export function numberSetting(config: Record<string, unknown>, ...keys: string[]): number | undefined {
  for (const key of keys) {
    const value = config[key];
    if (typeof value === 'number' && Number.isFinite(value)) return value;
  }
  return undefined;
}

/** The first of `keys` in `config` holding a string or an array of strings (a lone string becomes a list). */
export function stringListSetting(config: Record<string, unknown>, ...keys: string[]): string[] | undefined {
  for (const key of keys) {
    const value = config[key];
    if (typeof value === 'string') return [value];
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  }
  return undefined;
}

/**
 * The neutral settings of a request's `generateContentConfig`. Keys read (first present wins):
 * temperature; topP | top_p; topK | top_k; maxOutputTokens | maxTokens | max_tokens | max_completion_tokens;
 * stopSequences | stop_sequences | stop; seed; presencePenalty | presence_penalty;
 * frequencyPenalty | frequency_penalty.
 */
export function readGenerationSettings(config: Record<string, unknown> | undefined): GenerationSettings {
  const c = config ?? {};
  const settings: GenerationSettings = {};
  const set = <K extends keyof GenerationSettings>(
    key: K,
    value: GenerationSettings[K] | undefined,
  ): void => {
    if (value !== undefined) settings[key] = value;
  };
  set('temperature', numberSetting(c, 'temperature'));
  set('topP', numberSetting(c, 'topP', 'top_p'));
  set('topK', numberSetting(c, 'topK', 'top_k'));
  set('maxTokens', numberSetting(c, 'maxOutputTokens', 'maxTokens', 'max_tokens', 'max_completion_tokens'));
  set('stopSequences', stringListSetting(c, 'stopSequences', 'stop_sequences', 'stop'));
  set('seed', numberSetting(c, 'seed'));
  set('presencePenalty', numberSetting(c, 'presencePenalty', 'presence_penalty'));
  set('frequencyPenalty', numberSetting(c, 'frequencyPenalty', 'frequency_penalty'));
  return settings;
}

/**
 * Contents with neighbours of the same role merged into one (parts concatenated in order): Anthropic requires
 * user and assistant turns to alternate, and OpenAI's tool messages must directly follow the assistant message
 * holding their calls, which a model turn split in two (text, then calls) would break.
 */
export function mergeSameRoleContents(contents: readonly Content[]): Content[] {
  const merged: Content[] = [];
  for (const content of contents) {
    const prev = merged[merged.length - 1];
    if (prev && prev.role === content.role) prev.parts = [...prev.parts, ...content.parts];
    else merged.push({ role: content.role, parts: [...content.parts] });
  }
  return merged;
}

/**
 * Call ids for the conversation sent to a provider that needs one on every call and response: a call without
 * an id gets a positional one, and a response without an id takes the oldest unanswered id of its name.
 */
export class CallIdPairing {
  readonly #unanswered = new Map<string, string[]>();
  #next = 0;

  /** The id to send for `call` (its own, or a fresh positional one, remembered for its response). */
  callId(call: NonNullable<Part['functionCall']>): string {
    const id = call.id ?? `call_${this.#next++}`;
    const queue = this.#unanswered.get(call.name) ?? [];
    queue.push(id);
    this.#unanswered.set(call.name, queue);
    return id;
  }

  /** The id to send for `response`: its own, or the oldest unanswered call of the same name. */
  responseId(response: NonNullable<Part['functionResponse']>): string {
    const queue = this.#unanswered.get(response.name) ?? [];
    if (response.id !== undefined) {
      const at = queue.indexOf(response.id);
      if (at >= 0) queue.splice(at, 1);
      return response.id;
    }
    return queue.shift() ?? `call_${this.#next++}`;
  }
}

/**
 * A tool call's arguments from the JSON text the model streamed or returned ('' stands for no arguments).
 * @throws AgentloomError `MODEL_ERROR` (not retryable) when the text is not a JSON object: the model wrote a
 *   malformed call, which no tool could run.
 */
export function parseToolArguments(
  text: string,
  ctx: { provider: string; model: string; tool: string },
): Record<string, unknown> {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw malformed(ctx, err);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw malformed(ctx);
  return parsed as Record<string, unknown>;
}

function malformed(ctx: { provider: string; model: string; tool: string }, cause?: unknown): AgentloomError {
  return new AgentloomError(
    'MODEL_ERROR',
    `${ctx.provider} model '${ctx.model}' called tool '${ctx.tool}' with arguments that are not a JSON object.`,
    { details: { model: ctx.model, tool: ctx.tool }, cause },
  );
}
