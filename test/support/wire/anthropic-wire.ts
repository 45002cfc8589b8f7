/**
 * A scripted server speaking Anthropic's Messages wire format: `message` JSON, the server-sent event sequence
 * message_start / content_block_start / content_block_delta (text_delta, input_json_delta) / content_block_stop
 * / message_delta / message_stop (with a `ping`), and Anthropic's error body. Point an AnthropicModel at it with
 * `baseURL: server.url` (ANTHROPIC_BASE_URL=server.url).
 */
import { wireFlavour, type SseEvent, type WireReply } from './wire-server.js';

export type { RecordedRequest, ScriptedWireServer, WireReply } from './wire-server.js';

/** Starts an Anthropic-flavoured scripted server; with nothing queued it answers a 400 "no reply queued". */
export const startAnthropicWire = wireFlavour(() =>
  anthropicError(400, 'invalid_request_error', 'wire server: no reply queued'),
);

/** A content block of a scripted answer. */
export type ScriptedBlock =
  | { text: string }
  | { thinking: string; signature: string }
  | { toolUse: { id: string; name: string; input: Record<string, unknown> } };

/** Token counts of a scripted answer (Anthropic's input_tokens exclude the cached ones). */
export interface ScriptedUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheCreation?: number;
}

function usageBody(usage: ScriptedUsage): Record<string, unknown> {
  return {
    input_tokens: usage.input,
    output_tokens: usage.output,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    cache_creation_input_tokens: usage.cacheCreation ?? 0,
  };
}

function messageShell(
  model: string | undefined,
  content: unknown[],
  stop: string | null,
  usage: unknown,
): unknown {
  return {
    id: 'msg_scripted',
    type: 'message',
    role: 'assistant',
    model: model ?? 'scripted',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage,
  };
}

/** A whole `message` (stop reason tool_use when it holds a tool_use block, else end_turn). */
export function anthropicMessage(answer: {
  blocks: ScriptedBlock[];
  stopReason?: string;
  usage?: ScriptedUsage;
  model?: string;
}): WireReply {
  const content = answer.blocks.map((b) =>
    'text' in b
      ? { type: 'text', text: b.text }
      : 'thinking' in b
        ? { type: 'thinking', thinking: b.thinking, signature: b.signature }
        : { type: 'tool_use', ...b.toolUse },
  );
  const stop = answer.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  return {
    kind: 'json',
    body: messageShell(answer.model, content, stop, usageBody(answer.usage ?? { input: 10, output: 5 })),
  };
}

/** A streamed content block: text as its deltas, or a tool_use with its input JSON split into pieces. */
export type StreamedBlock =
  { text: string[] } | { toolUse: { id: string; name: string; jsonChunks: string[] } };

/**
 * The event sequence of a streamed message: message_start (input usage), a ping, per block content_block_start,
 * its deltas (text_delta / input_json_delta) and content_block_stop, then message_delta (stop reason, output
 * usage) and message_stop.
 */
export function anthropicStream(answer: {
  blocks: StreamedBlock[];
  stopReason?: string;
  usage?: ScriptedUsage;
  /** Stop after the blocks' deltas: no content_block_stop, message_delta or message_stop (a cut stream). */
  cut?: boolean;
}): WireReply {
  const usage = answer.usage ?? { input: 10, output: 5 };
  const ev = (event: string, data: Record<string, unknown>): SseEvent => ({
    event,
    data: JSON.stringify({ type: event, ...data }),
  });
  const startUsage = { ...usageBody(usage), output_tokens: 1 };
  const events: SseEvent[] = [
    ev('message_start', { message: messageShell(undefined, [], null, startUsage) }),
    ev('ping', {}),
  ];
  answer.blocks.forEach((block, index) => {
    if ('text' in block) {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const text of block.text) {
        events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text } }));
      }
    } else {
      const { id, name, jsonChunks } = block.toolUse;
      events.push(
        ev('content_block_start', { index, content_block: { type: 'tool_use', id, name, input: {} } }),
      );
      for (const partial_json of jsonChunks) {
        events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
      }
    }
    if (!answer.cut) events.push(ev('content_block_stop', { index }));
  });
  if (answer.cut) return { kind: 'sse', events };
  const stop = answer.stopReason ?? (answer.blocks.some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn');
  events.push(
    ev('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
    ev('message_stop', {}),
  );
  return { kind: 'sse', events };
}

/** Anthropic's error body `{"type":"error","error":{type,message}}` with an HTTP status (and headers). */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): WireReply {
  return {
    kind: 'json',
    status,
    ...(headers ? { headers } : {}),
    body: { type: 'error', error: { type, message }, request_id: 'req_scripted' },
  };
}
