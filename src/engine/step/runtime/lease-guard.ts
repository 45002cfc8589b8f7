/**
 * The lease of one claimed attempt as its process sees it, and the rule that a zombie never sends (ARCHITECTURE
 * "Zombie worker"): the clock check is the last thing before a model or tool request leaves the process.
 */
import { AgentloomError } from '../../../core/errors.js';

/**
 * The lease of one claimed attempt as this process sees it: when it was last renewed (by this process's clock),
 * and how to renew it (a fenced write that fails once another attempt claimed the node).
 */
export class LeaseGuard {
  private renewedAt: number;

  /** `leasedAt`: when the lease was taken or last renewed (Date.now()), when not now. */
  constructor(
    private readonly renewFn: () => Promise<boolean>,
    private readonly leaseMs: number,
    private readonly onLost: () => void,
    leasedAt: number = Date.now(),
  ) {
    this.renewedAt = leasedAt;
  }

  /** Renews the lease; false (and `onLost`) when the attempt was superseded. */
  async renew(): Promise<boolean> {
    const started = Date.now();
    const ours = await this.renewFn();
    if (ours) this.renewedAt = Math.max(this.renewedAt, started);
    else this.onLost();
    return ours;
  }

  /**
   * Resolves while the lease is surely held. Healthy steps renew every third of the lease, so this costs nothing;
   * past half the lease since the last renewal (the process was frozen, or its timers starved) it renews first.
   */
  async ensure(path: string, attempt: number): Promise<void> {
    if (this.fresh()) return;
    await this.renewOrFence(path, attempt);
  }

  /**
   * Calls `send` (what makes a request leave this process) with the lease surely held at that instant: the clock
   * check is synchronous and nothing awaits between it and `send()`, so a process frozen anywhere before (history
   * reads, callbacks, the budget) renews on waking and, superseded, stops with FENCED instead of sending.
   */
  async send<T>(path: string, attempt: number, signal: AbortSignal, send: () => Promise<T>): Promise<T> {
    for (;;) {
      if (signal.aborted) throw stopped(signal);
      if (this.fresh()) return send();
      await this.renewOrFence(path, attempt);
    }
  }

  /** Whether this process renewed the lease within the last half of it (healthy steps renew every third). */
  private fresh(): boolean {
    return Date.now() - this.renewedAt < this.leaseMs / 2;
  }

  private async renewOrFence(path: string, attempt: number): Promise<void> {
    if (!(await this.renew())) {
      throw new AgentloomError(
        'FENCED',
        `node ${path} attempt ${attempt} lost its lease while this process was not running; another worker took over`,
      );
    }
  }
}

/** Why a step whose signal aborted stops: the abort's own error (FENCED, TIMEOUT, CANCELLED), or CANCELLED. */
export function stopped(signal: AbortSignal): Error {
  return signal.reason instanceof AgentloomError
    ? signal.reason
    : new AgentloomError('CANCELLED', 'the step was stopped');
}
