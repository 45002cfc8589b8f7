/**
 * A scripted server speaking OpenAI's Chat Completions wire format (also what Azure OpenAI, Ollama and vLLM
 * speak): `chat.completion` JSON, `chat.completion.chunk` server-sent events ending in `data: [DONE]`, and
 * OpenAI's error body. Point an OpenAIModel at it with `baseURL: `${server.url}/v1`` (Azure: `endpoint:
 * server.url`; Ollama: OLLAMA_HOST=server.url).
 */
import { wireFlavour, type SseEvent, type WireReply } from './wire-server.js';

export type { RecordedRequest, ScriptedWireServer, WireReply } from './wire-server.js';

/** Starts an OpenAI-flavoured scripted server; with nothing queued it answers a 400 "no reply queued". */
export const startOpenAIWire = wireFlavour(() =>
  openaiError(400, 'wire server: no reply queued', { type: 'invalid_request_error' }),
);

/** A tool call the scripted model makes; `args` as an object (sent JSON-encoded) or as the raw string. */
export interface ScriptedToolCall {
  id: string;
  name: string;
  args: Record<string, unknown> | string;
}

/** Token counts of a scripted answer. */
export interface ScriptedUsage {
  prompt: number;
  completion: number;
  /** prompt_tokens_details.cached_tokens */
  cached?: number;
}

function usageBody(usage: ScriptedUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

const encode = (args: Record<string, unknown> | string): string =>
  typeof args === 'string' ? args : JSON.stringify(args);

/** A whole `chat.completion`: text and/or tool calls (finish reason tool_calls when there are calls). */
export function chatCompletion(answer: {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  refusal?: string;
  finishReason?: string;
  usage?: ScriptedUsage;
  model?: string;
}): WireReply {
  const calls = answer.toolCalls ?? [];
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: answer.text ?? null,
    refusal: answer.refusal ?? null,
  };
  if (calls.length > 0) {
    message.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: encode(c.args) },
    }));
  }
  return {
    kind: 'json',
    body: {
      id: 'chatcmpl-scripted',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: answer.model ?? 'scripted',
      choices: [
        {
          index: 0,
          message,
          logprobs: null,
          finish_reason: answer.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
        },
      ],
      usage: usageBody(answer.usage ?? { prompt: 10, completion: 5 }),
    },
  };
}

/** A streamed tool call: its arguments split over several chunks as the server sends them. */
export interface StreamedToolCall {
  id: string;
  name: string;
  argChunks: string[];
}

/**
 * A `chat.completion.chunk` stream: a role chunk, one chunk per text delta, each tool call as a chunk with its
 * id and name followed by one chunk per argument piece, a chunk with the finish reason, a usage chunk (empty
 * choices, as with `stream_options.include_usage`), then `data: [DONE]`.
 */
export function chatCompletionStream(answer: {
  text?: string[];
  toolCalls?: StreamedToolCall[];
  finishReason?: string;
  usage?: ScriptedUsage;
  /** Stop after the content chunks: no finish reason, no usage, no [DONE] (a stream cut short). */
  cut?: boolean;
  /** Leave `index` out of tool-call deltas, as older Ollama versions do. */
  omitIndex?: boolean;
}): WireReply {
  const calls = answer.toolCalls ?? [];
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): SseEvent => ({
    data: JSON.stringify({
      id: 'chatcmpl-scripted',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'scripted',
      choices,
      ...extra,
    }),
  });
  const delta = (d: Record<string, unknown>, finish: string | null = null): SseEvent =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  const events: SseEvent[] = [delta({ role: 'assistant', content: '' })];
  for (const text of answer.text ?? []) events.push(delta({ content: text }));
  calls.forEach((call, index) => {
    const at = answer.omitIndex ? {} : { index };
    const head = { ...at, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    events.push(delta({ tool_calls: [head] }));
    for (const piece of call.argChunks) {
      events.push(delta({ tool_calls: [{ ...at, function: { arguments: piece } }] }));
    }
  });
  if (answer.cut) return { kind: 'sse', events };
  events.push(delta({}, answer.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop')));
  events.push(chunk([], { usage: usageBody(answer.usage ?? { prompt: 10, completion: 5 }) }));
  events.push({ data: '[DONE]' });
  return { kind: 'sse', events };
}

/** OpenAI's error body `{"error":{message,type,param,code}}` with an HTTP status (and headers, e.g. retry-after). */
export function openaiError(
  status: number,
  message: string,
  extra: { type?: string; code?: string; headers?: Record<string, string> } = {},
): WireReply {
  return {
    kind: 'json',
    status,
    ...(extra.headers ? { headers: extra.headers } : {}),
    body: {
      error: { message, type: extra.type ?? 'invalid_request_error', param: null, code: extra.code ?? null },
    },
  };
}
