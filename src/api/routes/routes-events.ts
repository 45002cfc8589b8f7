/**
 * `GET /v1/invocations/:id/events`: a JSON page of stored events, or with `Accept: text/event-stream` a live SSE
 * stream (see event-stream.ts) resumable with `Last-Event-ID`, open through pauses until the run has ended.
 */
import * as z from 'zod';
import { SETTLED_INVOCATION } from '../../engine/runs/follow/follow.js';
import type { Event } from '../../core/event.js';
import { visibleInvocation } from '../http/access.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import { HttpError } from '../http/errors.js';
import { ENDED_INVOCATION, streamEvents } from '../http/event-stream.js';
import { eventListSchema, eventsQuerySchema, idParamsSchema } from '../http/schemas.js';

const DEFAULT_EVENT_PAGE = 1000;

/** `Last-Event-ID` (a seq this server sent), or undefined when absent; anything else is a 400 naming it. */
function lastEventId(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header[0] : header;
  if (text !== undefined && /^\d{1,15}$/.test(text.trim())) return Number(text.trim());
  throw new HttpError(400, 'VALIDATION', 'Last-Event-ID must be the id (seq) of an event this stream sent', {
    field: 'last-event-id',
    location: 'headers',
  });
}

function wantsStream(accept: string | undefined): boolean {
  return (accept ?? '').toLowerCase().includes('text/event-stream');
}

/** Registers the events route. */
export function eventRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.get('/v1/invocations/:id/events', {
    schema: {
      tags: ['invocations'],
      summary: "An invocation's events: a JSON page, or a live SSE stream with Accept: text/event-stream",
      description:
        'SSE: each stored event is a message whose id is its seq (reconnect with Last-Event-ID to resume); ' +
        'streamed partial events have no id; a comment line is sent as a heartbeat. The stream stays open ' +
        'through pauses: an `event: status` message ({status, lastSeq}) says each time the run settles ' +
        '(paused) and when it runs again (running), and an `event: end` message carries its status when it ' +
        'has ended (completed, failed, cancelled); then the stream closes. A reconnect with Last-Event-ID to a ' +
        'paused run answers 200 and waits for what comes next; only a reconnect to an ended run with nothing ' +
        'after that id answers 204 (browsers then stop reconnecting). `stay=0` ends the stream with `end` at ' +
        'the first settle, a pause included (and a reconnect to a paused run with nothing newer answers 204).',
      params: idParamsSchema,
      querystring: eventsQuerySchema,
      headers: z.looseObject({ 'last-event-id': z.string().optional(), accept: z.string().optional() }),
      response: {
        200: {
          description: 'stored events (application/json) or a stream (text/event-stream)',
          content: {
            'application/json': { schema: eventListSchema },
            'text/event-stream': { schema: z.string() },
          },
        },
        204: z
          .null()
          .describe('SSE reconnect with Last-Event-ID to an ended invocation: nothing more to send'),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request, reply) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      const { after, limit, stay = true, partial = true } = request.query;
      if (!wantsStream(request.headers.accept)) {
        const max = limit ?? DEFAULT_EVENT_PAGE;
        const events: Event[] = [];
        for await (const event of engine.events(view.id, { afterSeq: after ?? 0 })) {
          if (events.length === max) {
            const last = events[events.length - 1] as Event;
            return reply.type('application/json').send({ events, nextAfter: last.seq });
          }
          events.push(event);
        }
        return reply.type('application/json').send({ events, nextAfter: null });
      }
      const resumeAt = lastEventId(request.headers['last-event-id']);
      const afterSeq = resumeAt ?? after ?? 0;
      // A paused run goes on when answered: a reconnect to it waits (200), unless the client asked for stay=0.
      const over = stay ? ENDED_INVOCATION : SETTLED_INVOCATION;
      if (resumeAt !== undefined && over.has(view.status)) {
        const newer = engine.events(view.id, { afterSeq });
        const first = await newer.next();
        await newer.return(undefined);
        if (first.done) return reply.code(204).send(null);
      }
      reply.hijack();
      ctx.metrics.openStreams.inc();
      try {
        await streamEvents({
          engine,
          invocationId: view.id,
          sessionId: view.sessionId,
          afterSeq,
          stay,
          partial,
          heartbeatMs: ctx.heartbeatMs,
          retryMs: ctx.retryMs,
          response: reply.raw,
          logger: request.log,
          headers: { 'x-request-id': String(request.id) },
          shutdown: ctx.closing.signal,
        });
      } finally {
        ctx.metrics.openStreams.dec();
      }
    },
  });
}
