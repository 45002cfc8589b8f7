/** The caller's trace context on a request that starts a run: its `traceparent` header, checked. */
import type { FastifyRequest } from 'fastify';
import { parseTraceparent } from '../../core/trace-context.js';

/**
 * The request's `traceparent` when it is a valid W3C trace context, for `engine.enqueue({ traceparent })`. A
 * malformed one is ignored with a debug line (the run then gets a trace of its own): a caller's broken tracing
 * header never fails a run.
 */
export function traceparentOf(request: FastifyRequest): { traceparent?: string } {
  const header = request.headers.traceparent;
  if (header === undefined) return {};
  if (!parseTraceparent(header)) {
    request.log.debug({ traceparent: header }, 'malformed traceparent header ignored');
    return {};
  }
  return { traceparent: header as string };
}
