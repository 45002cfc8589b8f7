import type { StateAppend } from '../../core/event.js';
import type { StateAccessor } from '../../tools/tool.js';

/**
 * A state view over `base()` that records writes into `delta` (and list appends into `appends`), which the
 * caller stores as the event's `stateDelta` / `appendToState`.
 */
export function recordingState(
  base: () => Record<string, unknown>,
  delta: Record<string, unknown>,
  appends: StateAppend[] = [],
): StateAccessor & { appendToState(key: string, value: unknown): void } {
  const view = (): Record<string, unknown> => {
    const merged = { ...base(), ...delta };
    for (const { key, value } of appends) {
      const current = merged[key];
      merged[key] = Array.isArray(current)
        ? [...current, value]
        : current === undefined || current === null
          ? [value]
          : [current, value];
    }
    return merged;
  };
  return {
    get: <T>(key: string) => view()[key] as T | undefined,
    set: (key, value) => {
      delta[key] = value;
    },
    delete: (key) => {
      delta[key] = null;
    },
    has: (key) => view()[key] !== undefined && view()[key] !== null,
    toJSON: view,
    appendToState: (key, value) => {
      appends.push({ key, value });
    },
  };
}
