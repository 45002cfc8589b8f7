/**
 * Following an invocation over the API's server-sent events (`GET /v1/invocations/:id/events`, Accept:
 * text/event-stream), parsed by eventsource-parser. A stream that breaks before the run settles (the API restarted,
 * a proxy cut it) is resumed with `Last-Event-ID`, so every stored event is handed over once, in seq order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import * as z from 'zod';
import { eventSchema, type Event } from '../../core/event.js';
import type { ApiClient } from './api-client.js';
import { ApiClientError } from '../terminal/cli-errors.js';

/** How many times in a row a broken stream is opened again before giving up. */
const MAX_RECONNECTS = 20;
const BACKOFF_MS = [250, 500, 1_000, 2_000, 5_000] as const;

/** What the follower does with what arrives. */
export interface FollowHandlers {
  /** A stored event (each once, in seq order). */
  onEvent(event: Event): void;
  /** A streamed partial event (never stored; only with `partial`). */
  onPartial?(event: Event): void;
  /**
   * With `stay`: the run paused, or runs again after a pause (`status` event: `paused`, `running`, …). Resolve true
   * to stop following. (It has ended when the stream sends `end`: following stops then in any case.)
   */
  onSettled?(status: string): boolean | Promise<boolean>;
  /** The stream broke and is being opened again (attempt 1, 2, …). */
  onReconnect?(attempt: number, err: unknown): void;
}

/** Options of {@link followInvocation}. */
export interface FollowOptions {
  /** Start after this seq. Default 0: every event. */
  after?: number;
  partial?: boolean;
  /**
   * Keep following across pauses until `onSettled` says stop (or `signal` aborts). Without it, following stops at
   * the first pause, as `run --follow` and `events --follow` do (exit 3).
   */
  stay?: boolean;
  signal?: AbortSignal;
}

/** How following ended: the run's status then, and the last seq handed over. */
export interface FollowResult {
  status: string;
  lastSeq: number;
}

const endSchema = z.object({ status: z.string() });

/** Statuses of a `status` event at which following without `stay` stops (a pause; the others end with `end`). */
const SETTLED: ReadonlySet<string> = new Set(['paused', 'completed', 'failed', 'cancelled']);

function parseData<T>(schema: z.ZodType<T>, data: string): T {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ApiClientError(
      'BAD_RESPONSE',
      `the event stream sent a message that is not valid: ${data.slice(0, 120)}`,
    );
  }
  return parsed.data;
}

/** The SSE messages of a response body. */
function messagesOf(response: Response): AsyncIterable<EventSourceMessage> {
  if (!response.body) throw new ApiClientError('BAD_RESPONSE', 'the event stream has no body');
  return response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
}

/** Whether following may go on after `err`: a lost connection, not an answer of the API. */
function isTransient(err: unknown): boolean {
  if (err instanceof ApiClientError) return err.code === 'UNAVAILABLE' || err.code === 'TIMEOUT';
  // A body cut mid-stream: undici's `TypeError: terminated`, or a socket error.
  return err instanceof TypeError || (err as { code?: unknown })?.code === 'ECONNRESET';
}

/**
 * Follows the events of invocation `id` until it pauses or ends (or, with `stay`, until it ends or `onSettled`
 * says stop), resuming a broken stream after the last event received. The API's stream stays open through
 * pauses and says each with a `status` event. Resolves with the status it stopped at.
 */
export async function followInvocation(
  client: ApiClient,
  id: string,
  options: FollowOptions,
  handlers: FollowHandlers,
): Promise<FollowResult> {
  let lastSeq = options.after ?? 0;
  let resuming = false;
  let failures = 0;
  for (;;) {
    try {
      const response = await client.openEventStream(id, {
        ...(resuming ? { lastEventId: lastSeq } : { after: lastSeq }),
        partial: options.partial,
        stay: options.stay,
        signal: options.signal,
      });
      // A resumed stream of a settled run with nothing newer.
      if (response.status === 204) return { status: (await client.invocation(id)).status, lastSeq };
      for await (const message of messagesOf(response)) {
        failures = 0;
        if (message.event === 'end') return { status: parseData(endSchema, message.data).status, lastSeq };
        if (message.event === 'status') {
          const { status } = parseData(endSchema, message.data);
          if (options.stay ? await handlers.onSettled?.(status) : SETTLED.has(status)) {
            return { status, lastSeq };
          }
          continue;
        }
        if (message.event !== undefined) continue; // a kind of message this client does not know
        const event = parseData(eventSchema, message.data);
        if (message.id === undefined) handlers.onPartial?.(event);
        else if (event.seq > lastSeq) {
          lastSeq = event.seq;
          handlers.onEvent(event);
        }
      }
      // Closed without `end`: the server went away mid-stream.
      throw new ApiClientError('UNAVAILABLE', 'the event stream closed before the run settled');
    } catch (err) {
      if (options.signal?.aborted || !isTransient(err) || ++failures > MAX_RECONNECTS) throw err;
      handlers.onReconnect?.(failures, err);
      await sleep(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1], undefined, {
        signal: options.signal,
      });
      resuming = true;
    }
  }
}
