/**
 * The trace identity of a run, as pure functions: a W3C `traceparent` parsed and checked, the trace id of an
 * invocation (the caller's, else derived from the invocation id) and the span id of one of its nodes (derived from
 * the invocation id and the node path). Deriving them is what lets every process of a run, at any time, name the
 * same trace and the same parent span without reading anything or keeping anything open.
 */
import { createHash } from 'node:crypto';

/** A valid W3C trace context (https://www.w3.org/TR/trace-context/#traceparent-header). */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero: the caller's span, parent of the run's root span. */
  spanId: string;
  /** The trace flags byte (bit 0: sampled). */
  flags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * Parses a `traceparent` header value: undefined when it is absent or malformed (the caller then logs it at debug
 * and starts a trace of its own — a bad header is never an error). Accepts a future version's extra fields, as the
 * spec asks; refuses version `ff`, zero ids, and extra fields on version `00`.
 */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The `traceparent` value of a context (version 00). */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${parent.flags.toString(16).padStart(2, '0')}`;
}

/**
 * The trace id of an invocation: the caller's trace when one came with it (`traceparent`, as stored), else the
 * invocation id's own 32 hex digits (a UUID, with or without its `inv_` prefix), else a hash of it.
 */
export function invocationTraceId(invocationId: string, traceparent?: string | null): string {
  const caller = traceparent ? parseTraceparent(traceparent) : undefined;
  if (caller) return caller.traceId;
  const hex = invocationId
    .slice(invocationId.indexOf('_') + 1)
    .replaceAll('-', '')
    .toLowerCase();
  if (/^[0-9a-f]{32}$/.test(hex) && hex !== ZERO_TRACE) return hex;
  return createHash('sha256').update(invocationId).digest('hex').slice(0, 32);
}

/**
 * The span id of a node of an invocation (16 hex digits): the first 8 bytes of SHA-256 over the invocation id and
 * the node path, so any process names a node's span — the parent of its children's spans — without a read.
 */
export function nodeSpanId(invocationId: string, path: string): string {
  const id = createHash('sha256').update(invocationId).update('\0').update(path).digest('hex').slice(0, 16);
  // All zeros is no valid span id (a chance of 2^-64); any other fixed value will do.
  return id === ZERO_SPAN ? '0000000000000001' : id;
}
