/**
 * A pino child logger made only when a line is logged at an enabled level. pino serializes a child's bindings
 * when the child is made — through the redaction's wildcard paths (log-redaction.ts) — so a child per step costs
 * every step that work, though almost every step logs nothing at the default level (the redaction was
 * ~5% of a worker's time in W2's profile).
 */
import type { Logger } from 'pino';

const LEVELS: ReadonlySet<string> = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
const noop = (): void => undefined;

/** `logger.child(bindings)`, made on first use; a call at a disabled level uses nothing. */
export function lazyChild(logger: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const made = (): Logger => (child ??= logger.child(bindings));
  return new Proxy(logger, {
    get(_, prop) {
      if (typeof prop === 'string' && LEVELS.has(prop) && !logger.isLevelEnabled(prop)) return noop;
      const target = made();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
