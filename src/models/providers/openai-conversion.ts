/**
 * Our request and answer ↔ OpenAI Chat Completions (`POST /chat/completions`), as the official `openai` SDK
 * types them: messages, tools, structured output, generation settings, and the answer (whole or streamed in
 * chunks) back into a {@link ModelResponse}.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsBase,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { Content, Part } from '../../core/content.js';
import { newId } from '../../core/ids.js';
import {
  CallIdPairing,
  mergeSameRoleContents,
  parseToolArguments,
  readGenerationSettings,
} from './chat-conversion.js';
import { IncompleteStreamError } from './retrying.js';
import type { ModelRequest, ModelResponse, ModelUsage, ToolDeclaration } from '../model.js';

/** Which field carries the output-token limit: OpenAI and Azure take `max_completion_tokens`, Ollama `max_tokens`. */
export type MaxTokensField = 'max_completion_tokens' | 'max_tokens';

/** How the request body is built. */
export interface OpenAIBodyOptions {
  model: string;
  maxTokensField: MaxTokensField;
  /** `json_schema.strict` of structured output (OpenAI's strict mode needs every property required). */
  strictSchema: boolean;
}

/** The name the structured-output schema goes by (`response_format.json_schema.name`). */
export const RESPONSE_SCHEMA_NAME = 'response';

/**
 * The body of one Chat Completions call, without `stream` (the adapter adds it). Reads from
 * `generateContentConfig` the keys of {@link readGenerationSettings} plus `reasoningEffort | reasoning_effort`;
 * `max_tokens` or `max_completion_tokens` written there explicitly is sent under that name.
 */
export function toChatBody(
  request: ModelRequest,
  options: OpenAIBodyOptions,
): ChatCompletionCreateParamsBase {
  const body: ChatCompletionCreateParamsBase = { model: options.model, messages: toMessages(request) };
  if (request.responseSchema) {
    body.response_format = {
      type: 'json_schema',
      json_schema: {
        name: RESPONSE_SCHEMA_NAME,
        schema: request.responseSchema,
        strict: options.strictSchema,
      },
    };
  } else if (request.tools.length > 0) {
    body.tools = request.tools.map(toTool);
  }
  const config = request.generateContentConfig ?? {};
  const s = readGenerationSettings(config);
  if (s.temperature !== undefined) body.temperature = s.temperature;
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.maxTokens !== undefined) {
    const field =
      'max_completion_tokens' in config
        ? 'max_completion_tokens'
        : 'max_tokens' in config
          ? 'max_tokens'
          : options.maxTokensField;
    body[field] = s.maxTokens;
  }
  if (s.stopSequences !== undefined) body.stop = s.stopSequences;
  if (s.seed !== undefined) body.seed = s.seed;
  if (s.presencePenalty !== undefined) body.presence_penalty = s.presencePenalty;
  if (s.frequencyPenalty !== undefined) body.frequency_penalty = s.frequencyPenalty;
  const effort = config.reasoningEffort ?? config.reasoning_effort;
  if (typeof effort === 'string')
    body.reasoning_effort = effort as ChatCompletionCreateParamsBase['reasoning_effort'];
  return body;
}

/** A declaration as an OpenAI function tool; a tool without parameters gets an empty object schema. */
export function toTool(tool: ToolDeclaration): ChatCompletionFunctionTool {
  return {
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters ?? { type: 'object', properties: {} },
    },
  };
}

/**
 * The system instruction as a system message, then each turn: a model turn becomes one assistant message
 * (text and `tool_calls`); a user turn becomes a `tool` message per function response (first, so that they
 * directly follow the assistant's calls) and then a user message with its text and images. Thoughts are not sent.
 */
export function toMessages(request: ModelRequest): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.systemInstruction !== '') messages.push({ role: 'system', content: request.systemInstruction });
  const ids = new CallIdPairing();
  for (const content of mergeSameRoleContents(request.contents)) {
    if (content.role === 'model') messages.push(...assistantMessage(content, ids));
    else messages.push(...userMessages(content, ids));
  }
  return messages;
}

function assistantMessage(content: Content, ids: CallIdPairing): ChatCompletionMessageParam[] {
  const text = content.parts
    .filter((p) => p.text !== undefined && !p.thought)
    .map((p) => p.text)
    .join('');
  const calls: ChatCompletionMessageFunctionToolCall[] = content.parts.flatMap((p) =>
    p.functionCall
      ? [
          {
            id: ids.callId(p.functionCall),
            type: 'function' as const,
            function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) },
          },
        ]
      : [],
  );
  if (text === '' && calls.length === 0) return [];
  return [
    calls.length === 0
      ? { role: 'assistant', content: text }
      : { role: 'assistant', content: text === '' ? null : text, tool_calls: calls },
  ];
}

function userMessages(content: Content, ids: CallIdPairing): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  const parts: ChatCompletionContentPart[] = [];
  for (const part of content.parts) {
    if (part.functionResponse) {
      const { functionResponse } = part;
      out.push({
        role: 'tool',
        tool_call_id: ids.responseId(functionResponse),
        content: JSON.stringify(functionResponse.response),
      });
    } else if (part.text !== undefined && !part.thought) {
      parts.push({ type: 'text', text: part.text });
    } else if (part.inlineData) {
      parts.push(inlinePart(part.inlineData));
    }
  }
  if (parts.length === 0) return out;
  // One text is sent as a plain string (what every OpenAI-compatible server reads); several parts as a list.
  const only = parts.length === 1 ? parts[0] : undefined;
  out.push({ role: 'user', content: only?.type === 'text' ? only.text : parts });
  return out;
}

/** Inline bytes: images as a data URL; anything else (a PDF) as a file part. */
function inlinePart(data: NonNullable<Part['inlineData']>): ChatCompletionContentPart {
  const url = `data:${data.mimeType};base64,${data.data}`;
  return data.mimeType.startsWith('image/')
    ? { type: 'image_url', image_url: { url } }
    : {
        type: 'file',
        file: { file_data: url, filename: `attachment.${data.mimeType.split('/')[1] ?? 'bin'}` },
      };
}

/** OpenAI's finish reasons in Gemini's vocabulary (stop and tool_calls → STOP, length → MAX_TOKENS, …). */
export function toFinishReason(reason: string | null | undefined): string | undefined {
  switch (reason) {
    case null:
    case undefined:
      return undefined;
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return 'SAFETY';
    default:
      return 'OTHER';
  }
}

/** Token accounting; `cachedTokens` from `prompt_tokens_details.cached_tokens`. */
export function toUsage(usage: CompletionUsage | null | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  const out: ModelUsage = {
    promptTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
  };
  const cached = usage.prompt_tokens_details?.cached_tokens;
  if (typeof cached === 'number') out.cachedTokens = cached;
  return out;
}

/** Names the provider and model in errors about the answer (malformed tool arguments). */
export interface AnswerContext {
  provider: string;
  model: string;
}

/**
 * A whole chat.completion as our answer: the text (or, when the model refused, the refusal with finish reason
 * SAFETY), then one function call per tool call, keeping OpenAI's call id.
 */
export function fromCompletion(completion: ChatCompletion, ctx: AnswerContext): ModelResponse {
  const choice = completion.choices[0];
  const message = choice?.message;
  const parts: Part[] = [];
  const refused = !message?.content && Boolean(message?.refusal);
  const text = refused ? message?.refusal : message?.content;
  if (text) parts.push({ text });
  for (const call of message?.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    parts.push(functionCallPart(call.id, call.function.name, call.function.arguments, ctx));
  }
  return answer(parts, refused ? 'content_filter' : choice?.finish_reason, completion.usage);
}

function functionCallPart(id: string | undefined, name: string, args: string, ctx: AnswerContext): Part {
  return {
    functionCall: {
      id: id || newId('call'),
      name,
      args: parseToolArguments(args, { ...ctx, tool: name }),
    },
  };
}

function answer(
  parts: Part[],
  finish: string | null | undefined,
  usage: CompletionUsage | null | undefined,
): ModelResponse {
  const response: ModelResponse = { content: { role: 'model', parts } };
  const finishReason = toFinishReason(finish);
  if (finishReason !== undefined) response.finishReason = finishReason;
  const u = toUsage(usage);
  if (u) response.usage = u;
  return response;
}

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

/**
 * Assembles chat.completion.chunk events: text deltas are passed on as partials at once; tool-call deltas
 * (the id and name first, the arguments split over many chunks, keyed by `index`) are collected and surfaced as
 * one partial of whole calls when the stream ends, so that no listener ever sees half a call.
 */
export class ChunkAssembler {
  #text = '';
  #refusal = '';
  readonly #calls = new Map<number, PendingCall>();
  #finish: string | null = null;
  #usage: CompletionUsage | null | undefined;

  constructor(
    private readonly ctx: AnswerContext,
    private readonly onPartial: (partial: Content) => void,
  ) {}

  /** Takes one chunk, calling `onPartial` with its text. */
  push(chunk: ChatCompletionChunk): void {
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) return;
    if (choice.finish_reason) this.#finish = choice.finish_reason;
    const { content, refusal, tool_calls: calls } = choice.delta;
    if (content) {
      this.#text += content;
      this.onPartial({ role: 'model', parts: [{ text: content }] });
    }
    if (refusal) this.#refusal += refusal;
    for (const delta of calls ?? []) {
      const index = this.#indexOf(delta);
      const call = this.#calls.get(index) ?? { id: '', name: '', args: '' };
      this.#calls.set(index, call);
      if (delta.id) call.id = delta.id;
      if (delta.function?.name && call.name === '') call.name = delta.function.name;
      if (delta.function?.arguments) call.args += delta.function.arguments;
    }
  }

  /**
   * The call a delta belongs to: its `index`; servers that leave the index out (older Ollama) send a call's id
   * with its first delta only, so an id starts the next call and an id-less delta continues the last one.
   */
  #indexOf(delta: { index?: number; id?: string }): number {
    if (typeof delta.index === 'number') return delta.index;
    const last = Math.max(-1, ...this.#calls.keys());
    return delta.id || last < 0 ? last + 1 : last;
  }

  /**
   * The whole answer, after surfacing the completed calls as one partial.
   * @throws IncompleteStreamError when no chunk carried a finish reason (the stream was cut).
   */
  finish(): ModelResponse {
    if (this.#finish === null) throw new IncompleteStreamError(this.ctx.provider);
    const parts: Part[] = [];
    const text = this.#text || this.#refusal;
    if (text) parts.push({ text });
    const calls = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => functionCallPart(call.id, call.name, call.args, this.ctx));
    if (calls.length > 0) this.onPartial({ role: 'model', parts: calls });
    parts.push(...calls);
    const finish = this.#text === '' && this.#refusal !== '' ? 'content_filter' : this.#finish;
    return answer(parts, finish, this.#usage);
  }
}
