/**
 * What engines tell each other over the Bus: on `control`, stop the running steps of an invocation (cancelled, or
 * ended by endInvocation); on `partial`, a streamed partial event for local followers. A message that does not
 * parse (another version, garbage) is ignored.
 */
import { EventEmitter } from 'node:events';
import * as z from 'zod';
import type { Bus } from '../core/bus.js';
import { AgentloomError } from '../core/errors.js';
import type { Event } from '../core/event.js';

/** Why the steps of an invocation are stopped. */
export type StopReason = 'cancelled' | 'ended';

const controlSchema = z.object({ invocationId: z.string(), reason: z.enum(['cancelled', 'ended']) });

/** The `control` message stopping the steps of `invocationId`. */
export function stopMessage(invocationId: string, reason: StopReason): string {
  return JSON.stringify({ invocationId, reason });
}

/** A `control` message as the invocation and the error its running steps abort with; undefined if it does not parse. */
export function parseStopMessage(
  message: string,
): { invocationId: string; error: AgentloomError } | undefined {
  const parsed = controlSchema.safeParse(safeJson(message));
  if (!parsed.success) return undefined;
  const { invocationId, reason } = parsed.data;
  const text =
    reason === 'ended' ? 'the invocation was ended by endInvocation' : 'the invocation was cancelled';
  return { invocationId, error: new AgentloomError('CANCELLED', text) };
}

/** A `partial` message as its event; undefined if it does not parse as one. */
export function parsePartialMessage(message: string): Event | undefined {
  const event = safeJson(message) as Event | undefined;
  return event && typeof event.invocationId === 'string' ? event : undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Partial events for this process's followers (by invocation id), fed from the bus once someone follows them. */
export class PartialFeed {
  readonly events = new EventEmitter().setMaxListeners(0);
  private subscribed: Promise<unknown> | undefined;

  constructor(private readonly bus: Bus) {}

  /** Starts feeding from the bus (published by whichever process runs the step); once. */
  subscribe(): Promise<unknown> {
    this.subscribed ??= this.bus
      .subscribe('partial', (message) => {
        const event = parsePartialMessage(message);
        if (event) this.events.emit(event.invocationId, event);
      })
      .catch((err: unknown) => {
        // Not kept: a subscription that found the bus away is tried again by the next caller.
        this.subscribed = undefined;
        throw err;
      });
    return this.subscribed;
  }
}
