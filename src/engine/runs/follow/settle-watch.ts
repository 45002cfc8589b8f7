/**
 * What this process knows, without a read, of the invocations it enqueued: which have not settled yet. It listens
 * to the invocations' status notifications from before its first enqueue; an invocation enqueued while it
 * listened and not announced settled since is still unsettled, so `wait` skips its first read and waits for the
 * notification (one read per `wait` instead of two). Knowledge is dropped on a reconnect of the LISTEN connection
 * (notifications were lost meanwhile) and past a bound: an invocation it does not know is read, as before.
 */
import { INVOCATIONS_CHANNEL } from '../../../store/repos/invocations.js';
import type { Store } from '../../../store/store.js';
import { SETTLED_INVOCATION } from './follow.js';

/** Invocations remembered at most (the oldest are forgotten first: forgetting one only costs a read). */
const MAX_KNOWN = 10_000;

export class SettleWatch {
  /** Invocations enqueued while listening, not announced settled since. */
  private readonly unsettled = new Set<string>();
  private listening: Promise<unknown> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(private readonly store: Store) {}

  /**
   * Resolves once listening (the first call starts it). Call before creating an invocation, then
   * {@link enqueued} after: a notification of it cannot be missed in between. A failure to listen is swallowed
   * (nothing is then known, and waits read as before) and tried again on the next call.
   */
  ready(): Promise<unknown> {
    this.listening ??= this.store
      .listen(
        INVOCATIONS_CHANNEL,
        (payload) => this.onPayload(payload),
        () => this.unsettled.clear(),
      )
      .then(
        (unlisten) => {
          if (this.closed) return unlisten();
          this.unlisten = unlisten;
        },
        () => {
          // Not kept: the next call tries to listen again (until then, waits read as before).
          this.listening = undefined;
        },
      );
    return this.listening;
  }

  /** Records an invocation created after {@link ready} resolved (known unsettled until announced otherwise). */
  enqueued(invocationId: string): void {
    if (!this.unlisten) return;
    this.unsettled.add(invocationId);
    if (this.unsettled.size > MAX_KNOWN)
      this.unsettled.delete(this.unsettled.values().next().value as string);
  }

  /** True when the invocation is known not to have settled (its status need not be read to know it). */
  knownUnsettled(invocationId: string): boolean {
    return this.unsettled.has(invocationId);
  }

  /** Invocations known unsettled (for tests and metrics). */
  get size(): number {
    return this.unsettled.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsettled.clear();
    await this.unlisten?.().catch(() => undefined);
  }

  private onPayload(payload: string): void {
    let message: { id?: unknown; status?: unknown };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return;
    }
    // Any status but one `wait` does not stop at ends the knowledge (a payload of another shape included).
    if (typeof message.id !== 'string') return;
    if (typeof message.status === 'string' && !SETTLED_INVOCATION.has(message.status)) return;
    this.unsettled.delete(message.id);
  }
}
