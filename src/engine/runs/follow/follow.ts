/**
 * Following an invocation without polling: waiters wake on Postgres NOTIFY (invocation status changes, stored
 * events) and on in-process partial events. When the LISTEN connection drops and comes back, its reconnect hook
 * makes waiters read again (notifications sent meanwhile are lost); a one-second re-check remains the backstop.
 */
import type { EventEmitter } from 'node:events';
import { AgentloomError } from '../../../core/errors.js';
import type { Event } from '../../../core/event.js';
import { listEvents } from '../../../store/repos/events.js';
import { INVOCATIONS_CHANNEL } from '../../../store/repos/invocations.js';
import type { Store } from '../../../store/store.js';
import type { InvocationView } from '../views.js';

/** Statuses at which `wait` returns and a followed event stream ends. */
export const SETTLED_INVOCATION: ReadonlySet<string> = new Set([
  'completed',
  'paused',
  'failed',
  'cancelled',
]);

const RECHECK_MS = 1000;

/** A wake-up flag: `notify` wakes the current (or next) `next`. */
class WakeSignal {
  private wake: () => void = () => undefined;
  private pending: Promise<void> = this.reset();

  private reset(): Promise<void> {
    this.pending = new Promise<void>((resolve) => (this.wake = resolve));
    return this.pending;
  }

  notify(): void {
    this.wake();
  }

  /** Resolves on the next notification (or one already given), or after `maxMs`. */
  async next(maxMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pending, new Promise((resolve) => (timer = setTimeout(resolve, maxMs)))]);
    clearTimeout(timer);
    this.reset();
  }
}

/**
 * An invocation notification: `{id, status}`, and `view` when the statement that ended the invocation sent what
 * `engine.get` would read (undefined if the payload is not JSON).
 */
function noticeOf(payload: string): { id?: unknown; status?: unknown; view?: unknown } | undefined {
  try {
    const notice = JSON.parse(payload) as unknown;
    return typeof notice === 'object' && notice !== null ? notice : {};
  } catch {
    return undefined;
  }
}

/** How `wait` reads an invocation: from the store, and from the view a notification carried. */
export interface SettledReads {
  read: () => Promise<InvocationView>;
  /** The view in a notification's `view` field; undefined when it is not one. */
  fromNotice?: (view: unknown) => InvocationView | undefined;
}

/**
 * Resolves with the invocation once it is settled; TIMEOUT after `timeoutMs`. When `settles` knows it unsettled
 * (asked once, after this wait listens), the first read is skipped: the settling will be notified. A notification
 * of its settling that carries its view (the leaf completion that ends a run sends one) is returned as is, without
 * a read.
 */
export async function waitForSettled(
  store: Store,
  reads: SettledReads,
  invocationId: string,
  timeoutMs: number | undefined,
  settles?: { knownUnsettled(invocationId: string): boolean },
): Promise<InvocationView> {
  const signal = new WakeSignal();
  let noticed: InvocationView | undefined;
  const unlisten = await store.listen(
    INVOCATIONS_CHANNEL,
    (payload) => {
      if (!payload.includes(invocationId)) return;
      // `{id, status}`: a change to a status `wait` does not stop at (queued → running) needs no read.
      const notice = noticeOf(payload);
      if (notice?.id !== undefined && notice.id !== invocationId) return;
      const status = typeof notice?.status === 'string' ? notice.status : undefined;
      if (status !== undefined && !SETTLED_INVOCATION.has(status)) return;
      if (status !== undefined && notice?.view !== undefined) {
        // A view this process cannot make sense of is ignored: `wait` reads instead.
        let view: InvocationView | undefined;
        try {
          view = reads.fromNotice?.(notice.view);
        } catch {
          view = undefined;
        }
        if (view?.id === invocationId && view.status === status) noticed = view;
      }
      signal.notify();
    },
    // Reconnected after a lost LISTEN connection: the status change may have been notified meanwhile.
    () => signal.notify(),
  );
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  let skipRead = settles?.knownUnsettled(invocationId) ?? false;
  try {
    for (;;) {
      if (noticed) return noticed;
      const view = skipRead ? undefined : await reads.read();
      skipRead = false;
      if (view && SETTLED_INVOCATION.has(view.status)) return view;
      if (noticed) return noticed;
      const remaining = deadline === undefined ? RECHECK_MS : deadline - Date.now();
      if (remaining <= 0) {
        const status = view?.status ?? (await reads.read()).status;
        if (SETTLED_INVOCATION.has(status)) continue;
        throw new AgentloomError(
          'TIMEOUT',
          `invocation ${invocationId} is still ${status} after ${timeoutMs} ms`,
        );
      }
      await signal.next(Math.min(remaining, RECHECK_MS));
    }
  } finally {
    await unlisten();
  }
}

/** What {@link followEvents} needs. */
export interface FollowOptions {
  store: Store;
  partials: EventEmitter;
  invocationId: string;
  sessionId: string;
  status: () => Promise<string>;
  afterSeq?: number;
  follow?: boolean;
  partial?: boolean;
}

/** Stored events of an invocation after `afterSeq`; with `follow`, new ones until it settles. */
export async function* followEvents(options: FollowOptions): AsyncGenerator<Event> {
  const { store, invocationId } = options;
  let after = options.afterSeq ?? 0;
  let settled = false;
  const signal = new WakeSignal();
  // A reconnect of the LISTEN connection re-reads too: events stored meanwhile were not notified.
  const unsubscribe = options.follow
    ? await store.followSession(
        options.sessionId,
        () => signal.notify(),
        () => signal.notify(),
      )
    : () => undefined;
  const unlisten = options.follow
    ? await store.listen(
        INVOCATIONS_CHANNEL,
        () => signal.notify(),
        () => signal.notify(),
      )
    : async () => undefined;
  const partials: Event[] = [];
  const onPartial = (event: Event) => {
    partials.push(event);
    signal.notify();
  };
  if (options.follow && options.partial) options.partials.on(invocationId, onPartial);
  try {
    for (;;) {
      yield* partials.splice(0);
      const batch = await listEvents(store.db, options.sessionId, { afterSeq: after, invocationId });
      for (const event of batch) {
        after = event.seq;
        yield event;
      }
      if (!options.follow) return;
      if (batch.length > 0) continue;
      if (settled) return;
      // Settled: read once more, since its last events committed before the status did and may be unread.
      settled = SETTLED_INVOCATION.has(await options.status());
      if (!settled) await signal.next(RECHECK_MS);
    }
  } finally {
    options.partials.off(invocationId, onPartial);
    unsubscribe();
    await unlisten();
  }
}
