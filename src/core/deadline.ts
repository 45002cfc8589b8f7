/** Deadlines of single calls (a model call, a tool call): a clear error instead of a lease held forever. */
import type { AgentloomError } from './errors.js';

/** Options of {@link withDeadline}. */
export interface DeadlineOptions {
  /** The step's signal: aborting it aborts the call too. */
  parent: AbortSignal;
  /** No deadline when undefined. */
  timeoutMs: number | undefined;
  /** The error the call ends with when the deadline passes (also the abort reason the call sees). */
  error: () => AgentloomError;
  /**
   * Receives `hold`: while a hold is on (the call waits for a human, not for its work), the clock stops; the
   * returned function ends the hold, and the call has what was left of its time.
   */
  holds?: (hold: () => () => void) => void;
}

/**
 * Runs `call` with a signal that aborts when `parent` does or `timeoutMs` passes. At the deadline it rejects with
 * `error()` at once, whether or not the call honours its signal (what the call does afterwards is ignored).
 */
export async function withDeadline<T>(
  call: (signal: AbortSignal) => Promise<T>,
  options: DeadlineOptions,
): Promise<T> {
  if (options.timeoutMs === undefined) return call(options.parent);
  const controller = new AbortController();
  const { parent } = options;
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  let timer: NodeJS.Timeout | undefined;
  let left = options.timeoutMs;
  let since = Date.now();
  let held = 0;
  let settled = false;
  let expire: () => void = () => undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    expire = () => {
      const err = options.error();
      controller.abort(err);
      reject(err);
    };
    timer = setTimeout(expire, left);
  });
  options.holds?.(() => {
    if (held++ === 0) {
      clearTimeout(timer);
      left -= Date.now() - since;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--held === 0 && !settled && !controller.signal.aborted) {
        since = Date.now();
        timer = setTimeout(expire, Math.max(0, left));
      }
    };
  });
  try {
    return await Promise.race([call(controller.signal), deadline]);
  } finally {
    settled = true;
    clearTimeout(timer);
    parent.removeEventListener('abort', onParent);
  }
}

/** Checks an optional timeout option: a positive number of milliseconds, or undefined. */
export function isTimeoutMs(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && Number.isFinite(value) && value > 0);
}
