/**
 * A server-sent-events client for tests: Node's fetch reading `GET …/events` with `Accept: text/event-stream`,
 * parsed by eventsource-parser, message by message in the background, so a test can watch events arrive live,
 * disconnect at any point, and reconnect with `Last-Event-ID`.
 */
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import type { Event } from '../../../src/index.js';

/** A stream being read. */
export interface SseClient {
  /** HTTP status of the answer (200, or 204 for a resumed stream with nothing left). */
  status: number;
  /** Every message so far, in arrival order. */
  messages: EventSourceMessage[];
  /** Every comment line so far (the server's heartbeats), in arrival order. */
  comments: string[];
  /** Resolves when the server ended the stream or the client disconnected. */
  done: Promise<void>;
  /** Whether the server ended the stream (not the client). */
  ended: boolean;
  /** Disconnects, as a client that goes away does. */
  abort(): void;
  /** The stored events received (messages with an id), parsed. */
  events(): Event[];
  /** The data of the named events received (`end`, `status`), parsed. */
  named(name: string): { status: string; lastSeq: number }[];
}

/** Opens an SSE request and reads it in the background. */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const client: SseClient = {
    status: response.status,
    messages: [],
    comments: [],
    ended: false,
    done: Promise.resolve(),
    abort: () => controller.abort(),
    events: () =>
      client.messages
        .filter((m) => m.id !== undefined && m.event === undefined)
        .map((m) => JSON.parse(m.data) as Event),
    named: (name) =>
      client.messages
        .filter((m) => m.event === name)
        .map((m) => JSON.parse(m.data) as { status: string; lastSeq: number }),
  };
  if (response.status !== 200 || !response.body) {
    client.ended = true;
    await response.body?.cancel();
    return client;
  }
  const messages = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream({ onComment: (comment) => client.comments.push(comment) }));
  client.done = (async () => {
    try {
      for await (const message of messages) {
        if (controller.signal.aborted) return;
        client.messages.push(message);
      }
      client.ended = true;
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    }
  })();
  return client;
}
