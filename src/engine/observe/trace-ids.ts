/**
 * Chosen span and trace ids through the OpenTelemetry API. The API cannot start a span with a given id; an SDK asks
 * its `IdGenerator`, synchronously, inside `tracer.startSpan` (sdk-trace's Tracer: `generateSpanId()` first, then
 * `generateTraceId()` for a span without a valid parent). {@link AgentloomIdGenerator} answers with the ids that
 * {@link startSpanWithIds} put in a slot just before that call, and with random ids otherwise. agentloom's SDK
 * setup installs it; a library user who registers an SDK of their own passes it as `idGenerator` (README
 * "Tracing"): without it a run's spans still share its trace id but workflow spans get random ids, so the
 * steps of other processes do not find their parent.
 */
import { randomFillSync } from 'node:crypto';
import type { Context, Span, SpanOptions, Tracer } from '@opentelemetry/api';

/** Ids for the next `startSpan` of this thread (set and cleared around it, with no await in between). */
let slot: { traceId: string | undefined; spanId: string | undefined } | undefined;

const random = Buffer.alloc(16);

function randomHex(bytes: 8 | 16): string {
  for (;;) {
    randomFillSync(random, 0, bytes);
    const hex = random.toString('hex', 0, bytes);
    // All zeros is no valid id (a chance of 2^-64 or less).
    if (/[^0]/.test(hex)) return hex;
  }
}

/**
 * An OpenTelemetry SDK `IdGenerator` (sdk-trace-base's interface, structurally) that returns the ids agentloom chose
 * for a span — a node's span id derived from its path, a run's trace id derived from its invocation — and random
 * ids for every other span.
 */
export class AgentloomIdGenerator {
  /** A 16-byte trace id as 32 lowercase hex digits. */
  generateTraceId(): string {
    const chosen = slot?.traceId;
    if (chosen && slot) {
      slot.traceId = undefined;
      return chosen;
    }
    return randomHex(16);
  }

  /** An 8-byte span id as 16 lowercase hex digits. */
  generateSpanId(): string {
    const chosen = slot?.spanId;
    if (chosen && slot) {
      slot.spanId = undefined;
      return chosen;
    }
    return randomHex(8);
  }
}

/**
 * `tracer.startSpan(name, options, context)` whose span gets `ids.spanId` (and `ids.traceId` when it has no
 * parent), provided the SDK's id generator is {@link AgentloomIdGenerator}. startSpan is synchronous, so no other
 * span can take the slot in between.
 */
export function startSpanWithIds(
  tracer: Tracer,
  name: string,
  options: SpanOptions,
  context: Context,
  ids: { traceId?: string; spanId?: string },
): Span {
  slot = { traceId: ids.traceId, spanId: ids.spanId };
  try {
    return tracer.startSpan(name, options, context);
  } finally {
    slot = undefined;
  }
}
