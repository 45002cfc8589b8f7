/**
 * Our request and answer ↔ Anthropic's Messages API (`POST /v1/messages`), as `@anthropic-ai/sdk` types it:
 * alternating user/assistant messages of content blocks, `tool_use` / `tool_result` blocks, tools with an
 * `input_schema`, structured output as a forced tool, and the answer (whole or streamed as events) back into a
 * {@link ModelResponse}.
 */
import type {
  ContentBlock,
  ContentBlockParam,
  Message,
  MessageCreateParamsBase,
  MessageParam,
  RawContentBlockDelta,
  RawContentBlockStartEvent,
  RawMessageStreamEvent,
  Tool,
  Usage,
} from '@anthropic-ai/sdk/resources/messages';
import type { Content, Part } from '../../core/content.js';
import {
  CallIdPairing,
  mergeSameRoleContents,
  parseToolArguments,
  readGenerationSettings,
} from './chat-conversion.js';
import type { JsonSchema, ModelRequest, ModelResponse, ModelUsage, ToolDeclaration } from '../model.js';
import { IncompleteStreamError } from './retrying.js';

/** The forced tool that carries a structured answer (`responseSchema`). */
export const STRUCTURED_OUTPUT_TOOL = 'structured_output';

/** How a structured answer is read back: from the forced tool's input, unwrapped when the schema was wrapped. */
export interface StructuredOutput {
  /** The schema's root was not an object, so it was wrapped as `{ value: <schema> }`. */
  wrapped: boolean;
}

/** The body of one Messages call (without `stream`) and how to read a structured answer, if one was asked for. */
export interface AnthropicCall {
  body: MessageCreateParamsBase;
  structured?: StructuredOutput;
}

/**
 * Builds a Messages call. Reads from `generateContentConfig` the keys of {@link readGenerationSettings}
 * (temperature, top_p, top_k, max_tokens, stop_sequences) plus `thinking` (passed as it is, except with a
 * `responseSchema`); `max_tokens` falls back to `defaultMaxTokens` because the API requires it.
 */
export function toAnthropicCall(
  request: ModelRequest,
  options: { model: string; defaultMaxTokens: number },
): AnthropicCall {
  const config = request.generateContentConfig ?? {};
  const s = readGenerationSettings(config);
  // Sampling settings are sent when given, though this SDK's types do not list them (hence the open record).
  const body: MessageCreateParamsBase & Record<string, unknown> = {
    model: options.model,
    max_tokens: s.maxTokens ?? options.defaultMaxTokens,
    messages: toMessages(request.contents),
  };
  if (request.systemInstruction !== '') body.system = request.systemInstruction;
  if (s.temperature !== undefined) body.temperature = s.temperature;
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.topK !== undefined) body.top_k = s.topK;
  if (s.stopSequences !== undefined) body.stop_sequences = s.stopSequences;
  // Extended thinking allows tool_choice auto or none only, so a structured answer (a forced tool) goes without.
  if (typeof config.thinking === 'object' && config.thinking !== null && !request.responseSchema) {
    body.thinking = config.thinking as MessageCreateParamsBase['thinking'];
  }
  if (request.responseSchema) {
    const wrapped = request.responseSchema.type !== 'object';
    const inputSchema = wrapped
      ? { type: 'object', properties: { value: request.responseSchema }, required: ['value'] }
      : request.responseSchema;
    body.tools = [
      toTool({
        name: STRUCTURED_OUTPUT_TOOL,
        description: 'Give your answer with this tool: its input is your whole answer.',
        parameters: inputSchema,
      }),
    ];
    body.tool_choice = { type: 'tool', name: STRUCTURED_OUTPUT_TOOL };
    return { body, structured: { wrapped } };
  }
  if (request.tools.length > 0) body.tools = request.tools.map(toTool);
  return { body };
}

/** A declaration as an Anthropic tool; a tool without parameters gets an empty object schema. */
export function toTool(tool: ToolDeclaration): Tool {
  const schema: JsonSchema = tool.parameters ?? { type: 'object', properties: {} };
  return { name: tool.name, description: tool.description, input_schema: schema as Tool['input_schema'] };
}

/**
 * Contents as alternating messages (neighbours of the same role merged). A user turn's `tool_result` blocks
 * come first, as the API requires; a model turn keeps its order (thinking, text, `tool_use`). A thought is sent
 * back as a thinking block only with its signature (Anthropic needs it on the turn that called tools).
 * Empty texts and empty messages are left out (the API rejects them).
 */
export function toMessages(contents: readonly Content[]): MessageParam[] {
  const ids = new CallIdPairing();
  const turns: { role: 'user' | 'assistant'; blocks: ContentBlockParam[] }[] = [];
  for (const content of mergeSameRoleContents(contents)) {
    const blocks = content.parts.flatMap((part) => toBlocks(part, ids));
    if (blocks.length === 0) continue;
    const role = content.role === 'user' ? 'user' : 'assistant';
    // A turn left empty (only unsigned thoughts) would put two turns of one role side by side: merge them.
    const prev = turns[turns.length - 1];
    if (prev?.role === role) prev.blocks.push(...blocks);
    else turns.push({ role, blocks });
  }
  return turns.map(({ role, blocks }) =>
    role === 'assistant'
      ? { role, content: blocks }
      : {
          role,
          content: [
            ...blocks.filter((b) => b.type === 'tool_result'),
            ...blocks.filter((b) => b.type !== 'tool_result'),
          ],
        },
  );
}

function toBlocks(part: Part, ids: CallIdPairing): ContentBlockParam[] {
  if (part.functionCall) {
    const { name, args } = part.functionCall;
    return [{ type: 'tool_use', id: ids.callId(part.functionCall), name, input: args ?? {} }];
  }
  if (part.functionResponse) {
    const content = JSON.stringify(part.functionResponse.response);
    return [{ type: 'tool_result', tool_use_id: ids.responseId(part.functionResponse), content }];
  }
  if (part.thought) {
    return part.thoughtSignature !== undefined && part.text
      ? [{ type: 'thinking', thinking: part.text, signature: part.thoughtSignature }]
      : [];
  }
  if (part.text) return [{ type: 'text', text: part.text }];
  if (part.inlineData) {
    const { mimeType, data } = part.inlineData;
    if (mimeType === 'application/pdf') {
      return [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }];
    }
    if (mimeType.startsWith('image/')) {
      const media_type = mimeType as 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
      return [{ type: 'image', source: { type: 'base64', media_type, data } }];
    }
  }
  return [];
}

/** Anthropic's stop reasons in Gemini's vocabulary (end_turn, tool_use, stop_sequence → STOP, …). */
export function toFinishReason(reason: string | null | undefined): string | undefined {
  switch (reason) {
    case null:
    case undefined:
      return undefined;
    case 'end_turn':
    case 'tool_use':
    case 'stop_sequence':
    case 'pause_turn':
      return 'STOP';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'MAX_TOKENS';
    case 'refusal':
      return 'SAFETY';
    default:
      return 'OTHER';
  }
}

/** The token counts Anthropic reports (message_start and message_delta carry parts of them). */
export type AnthropicUsage = Partial<
  Pick<Usage, 'input_tokens' | 'output_tokens' | 'cache_read_input_tokens' | 'cache_creation_input_tokens'>
>;

/**
 * Token accounting: Anthropic's `input_tokens` leaves cached tokens out, so `promptTokens` adds cache reads and
 * cache writes back (as Gemini and OpenAI count them); `cachedTokens` is `cache_read_input_tokens`.
 */
export function toUsage(usage: AnthropicUsage | undefined): ModelUsage | undefined {
  if (!usage) return undefined;
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const promptTokens = (usage.input_tokens ?? 0) + cacheRead + (usage.cache_creation_input_tokens ?? 0);
  const outputTokens = usage.output_tokens ?? 0;
  const out: ModelUsage = { promptTokens, outputTokens, totalTokens: promptTokens + outputTokens };
  if (typeof usage.cache_read_input_tokens === 'number') out.cachedTokens = cacheRead;
  return out;
}

/** Names the provider and model in errors about the answer, and how to read a structured one. */
export interface AnswerContext {
  provider: string;
  model: string;
  structured?: StructuredOutput | undefined;
}

/** A tool_use block's input as a part: a function call, or the structured answer's JSON text. */
function toolUsePart(id: string, name: string, input: Record<string, unknown>, ctx: AnswerContext): Part {
  if (ctx.structured && name === STRUCTURED_OUTPUT_TOOL) {
    return { text: JSON.stringify(ctx.structured.wrapped ? input.value : input) ?? 'null' };
  }
  return { functionCall: { id, name, args: input } };
}

function fromBlock(block: ContentBlock, ctx: AnswerContext): Part[] {
  switch (block.type) {
    case 'text':
      return block.text === '' || ctx.structured ? [] : [{ text: block.text }];
    case 'thinking':
      return [{ text: block.thinking, thought: true, thoughtSignature: block.signature }];
    case 'tool_use':
      return [toolUsePart(block.id, block.name, block.input as Record<string, unknown>, ctx)];
    default:
      return [];
  }
}

/** A whole message as our answer, keeping Anthropic's tool_use ids as our call ids. */
export function fromMessage(message: Message, ctx: AnswerContext): ModelResponse {
  const parts = message.content.flatMap((block) => fromBlock(block, ctx));
  return answer(parts, message.stop_reason, message.usage);
}

function answer(
  parts: Part[],
  stop: string | null | undefined,
  usage: AnthropicUsage | undefined,
): ModelResponse {
  const response: ModelResponse = { content: { role: 'model', parts } };
  const finishReason = toFinishReason(stop);
  if (finishReason !== undefined) response.finishReason = finishReason;
  const u = toUsage(usage);
  if (u) response.usage = u;
  return response;
}

type StreamBlock =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; text: string; signature: string }
  | { kind: 'tool'; id: string; name: string; json: string; start: unknown; part?: Part }
  | { kind: 'other' };

/**
 * Assembles the event stream (message_start, content_block_start / _delta / _stop, message_delta,
 * message_stop): text and thinking deltas are passed on as partials at once; a tool_use block's
 * `input_json_delta` pieces are joined and the call surfaced as a partial only at its content_block_stop, whole.
 */
export class EventAssembler {
  readonly #blocks = new Map<number, StreamBlock>();
  readonly #usage: AnthropicUsage = {};
  #stop: string | null = null;
  #complete = false;

  constructor(
    private readonly ctx: AnswerContext,
    private readonly onPartial: (partial: Content) => void,
  ) {}

  /** Takes one event, calling `onPartial` with what became visible. */
  push(event: RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.#addUsage(event.message.usage);
        return;
      case 'content_block_start':
        return this.#start(event.index, event.content_block);
      case 'content_block_delta':
        return this.#delta(event.index, event.delta);
      case 'content_block_stop':
        return this.#stopBlock(event.index);
      case 'message_delta':
        this.#stop = event.delta.stop_reason ?? this.#stop;
        this.#addUsage(event.usage);
        return;
      case 'message_stop':
        this.#complete = true;
        return;
    }
  }

  /**
   * The whole answer.
   * @throws IncompleteStreamError when the stream ended before message_stop (the connection was cut).
   */
  finish(): ModelResponse {
    if (!this.#complete) throw new IncompleteStreamError(this.ctx.provider);
    const parts: Part[] = [];
    for (const [, block] of [...this.#blocks.entries()].sort(([a], [b]) => a - b)) {
      if (block.kind === 'text' && block.text !== '' && !this.ctx.structured)
        parts.push({ text: block.text });
      if (block.kind === 'thinking') {
        parts.push({ text: block.text, thought: true, thoughtSignature: block.signature });
      }
      if (block.kind === 'tool' && block.part) parts.push(block.part);
    }
    return answer(parts, this.#stop, this.#usage);
  }

  #addUsage(usage: Partial<Record<keyof AnthropicUsage, number | null>> | undefined): void {
    for (const key of [
      'input_tokens',
      'output_tokens',
      'cache_read_input_tokens',
      'cache_creation_input_tokens',
    ] as const) {
      const value = usage?.[key];
      if (typeof value === 'number') this.#usage[key] = value;
    }
  }

  #start(index: number, block: RawContentBlockStartEvent['content_block']): void {
    if (block.type === 'text') {
      this.#blocks.set(index, { kind: 'text', text: '' });
      if (block.text !== '') this.#text(index, block.text, false);
    } else if (block.type === 'thinking') {
      this.#blocks.set(index, { kind: 'thinking', text: '', signature: block.signature });
      if (block.thinking !== '') this.#text(index, block.thinking, true);
    } else if (block.type === 'tool_use') {
      this.#blocks.set(index, { kind: 'tool', id: block.id, name: block.name, json: '', start: block.input });
    } else {
      this.#blocks.set(index, { kind: 'other' });
    }
  }

  #delta(index: number, delta: RawContentBlockDelta): void {
    const block = this.#blocks.get(index);
    if (delta.type === 'text_delta') this.#text(index, delta.text, false);
    else if (delta.type === 'thinking_delta') this.#text(index, delta.thinking, true);
    else if (delta.type === 'signature_delta' && block?.kind === 'thinking')
      block.signature += delta.signature;
    else if (delta.type === 'input_json_delta' && block?.kind === 'tool') block.json += delta.partial_json;
  }

  #text(index: number, text: string, thought: boolean): void {
    const block = this.#blocks.get(index);
    if (!block || (block.kind !== 'text' && block.kind !== 'thinking')) return;
    block.text += text;
    if (block.kind === 'text' && this.ctx.structured) return;
    this.onPartial({ role: 'model', parts: [thought ? { text, thought: true } : { text }] });
  }

  #stopBlock(index: number): void {
    const block = this.#blocks.get(index);
    if (block?.kind !== 'tool') return;
    const input =
      block.json === '' && typeof block.start === 'object' && block.start !== null
        ? (block.start as Record<string, unknown>)
        : parseToolArguments(block.json, { ...this.ctx, tool: block.name });
    block.part = toolUsePart(block.id, block.name, input, this.ctx);
    this.onPartial({ role: 'model', parts: [block.part] });
  }
}
