/**
 * Server-sent events of an invocation (`GET /v1/invocations/:id/events` with `Accept: text/event-stream`).
 *
 * - A stored event is one message with `id: <seq>`, so a client that reconnects with `Last-Event-ID` (browsers do
 *   it by themselves) resumes after the last event it received: seq order is commit order within a session, so
 *   nothing is missed and nothing is sent twice.
 * - Streamed partial events (never stored) are messages without an id: they do not move the resume point.
 * - A comment line every `heartbeatMs` keeps proxies from closing an idle stream.
 * - A paused run has not ended (a human may answer in a minute or in a week): by default (`stay`) the stream stays
 *   open through pauses. A `status` event says each time the run settles (paused) and when it runs again, and an
 *   `end` event carries its status when it has ended (completed, failed, cancelled); then the stream closes.
 *   Without `stay` (`?stay=0`) the stream ends with `end` at the first settle, a pause included.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Event } from '../../core/event.js';
import type { Engine } from '../../engine/engine.js';
import { SETTLED_INVOCATION } from '../../engine/runs/follow/follow.js';
import { INVOCATIONS_CHANNEL } from '../../store/repos/invocations.js';

/** Statuses at which a run has ended: its stream sends `end` and closes (a paused run goes on when answered). */
export const ENDED_INVOCATION: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** What {@link streamEvents} needs. */
export interface EventStreamOptions {
  engine: Engine;
  invocationId: string;
  sessionId: string;
  /** Send stored events with a greater seq. */
  afterSeq: number;
  /** Stay open through pauses (true: the default of the route), or end at the first settle. */
  stay: boolean;
  partial: boolean;
  heartbeatMs: number;
  /** Milliseconds a browser waits before reconnecting (the `retry:` field). */
  retryMs: number;
  response: ServerResponse;
  logger: Logger;
  /** Extra response headers (e.g. the request id). */
  headers?: Record<string, string>;
  /** Aborted when the server shuts down: the stream ends (the client resumes elsewhere). */
  shutdown?: AbortSignal;
}

/**
 * Iterates `source` until `signal` aborts. A follower waiting for the next event is not interrupted by
 * `return()` (an async generator handles it only at its next `yield`), so this stops waiting at once and lets the
 * follower finish in the background: it unsubscribes at its next event or when the invocation settles.
 */
export async function* untilAborted<T>(source: AsyncGenerator<T>, signal: AbortSignal): AsyncGenerator<T> {
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  try {
    for (;;) {
      const pending = source.next();
      const next = await Promise.race([pending, aborted]);
      if (next === 'aborted') {
        // Abandoned: a failure it meets later (the engine closing under it) is nobody's to handle.
        pending.catch(() => undefined);
        return;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    source.return(undefined).catch(() => undefined);
  }
}

/** One SSE message. JSON never contains a raw newline, so `data` is a single line. */
function message(event: Event): string {
  const data = `data: ${JSON.stringify(event)}\n\n`;
  return event.partial ? data : `id: ${event.seq}\n${data}`;
}

/**
 * Waits until the settled invocation may have moved on: a new event in its session or a status change, or abort.
 * Subscribes first and then looks, so a change in between is not missed.
 */
async function waitForChange(o: EventStreamOptions, afterSeq: number, signal: AbortSignal): Promise<void> {
  let wake: () => void = () => undefined;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const unsubscribe = await o.engine.store.followSession(o.sessionId, wake, wake);
  const unlisten = await o.engine.store.listen(
    INVOCATIONS_CHANNEL,
    (payload) => {
      if (payload.includes(o.invocationId)) wake();
    },
    wake,
  );
  const onAbort = () => wake();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const view = await o.engine.get(o.invocationId);
    if (!SETTLED_INVOCATION.has(view.status)) return;
    const newer = o.engine.events(o.invocationId, { afterSeq });
    const first = await newer.next();
    await newer.return(undefined);
    if (!first.done) return;
    await woken;
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
    await unlisten();
  }
}

/** Streams an invocation's events to `response` until it ends (without `stay`: until it settles). */
export async function streamEvents(o: EventStreamOptions): Promise<void> {
  const { response } = o;
  const controller = new AbortController();
  const { signal } = controller;
  const abort = () => controller.abort();
  response.once('close', abort);
  response.once('error', abort);
  if (o.shutdown?.aborted) abort();
  o.shutdown?.addEventListener('abort', abort, { once: true });
  const write = async (chunk: string): Promise<void> => {
    if (signal.aborted || response.writableEnded) return;
    if (response.write(chunk)) return;
    // A slow reader: wait for its socket to drain (or for it to go away).
    await Promise.race([once(response, 'drain'), once(signal, 'abort')]).catch(() => undefined);
  };
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...o.headers,
  });
  response.write(`retry: ${o.retryMs}\n\n`);
  const heartbeat = setInterval(() => {
    if (!signal.aborted && !response.writableEnded) response.write(': keep-alive\n\n');
  }, o.heartbeatMs);
  let after = o.afterSeq;
  const named = (name: string, status: string) =>
    write(`event: ${name}\ndata: ${JSON.stringify({ status, lastSeq: after })}\n\n`);
  // The status last announced, and whether stored events were sent since: a run that paused, ran and paused
  // again before this stream looked in between is announced paused again (a new call waits for an answer).
  let announced: string | undefined;
  let sentSince = false;
  try {
    for (;;) {
      const follower = o.engine.events(o.invocationId, { afterSeq: after, follow: true, partial: o.partial });
      for await (const event of untilAborted(follower, signal)) {
        if (!event.partial) {
          after = event.seq;
          sentSince = true;
        }
        await write(message(event));
      }
      if (signal.aborted) return;
      const { status } = await o.engine.get(o.invocationId);
      if (!o.stay || ENDED_INVOCATION.has(status)) {
        await named('end', status);
        return;
      }
      if (status !== announced || sentSince) await named('status', status);
      announced = status;
      sentSince = false;
      await waitForChange(o, after, signal);
      if (signal.aborted) return;
      // Running again (answered, retried): say so before its events come.
      const moved = (await o.engine.get(o.invocationId)).status;
      if (!SETTLED_INVOCATION.has(moved) && moved !== announced) {
        await named('status', moved);
        announced = moved;
      }
    }
  } catch (err) {
    // Headers are sent: the stream can only end. The client resumes from its last event id.
    o.logger.warn({ err, invocationId: o.invocationId }, 'event stream failed');
  } finally {
    clearInterval(heartbeat);
    response.off('close', abort);
    response.off('error', abort);
    o.shutdown?.removeEventListener('abort', abort);
    if (!response.writableEnded) response.end();
  }
}
