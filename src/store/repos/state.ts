/**
 * State scopes (SEMANTICS §1): unprefixed keys belong to the session, `app:` keys to every session of the app,
 * `user:` keys to every session of that user in the app, `temp:` keys to the current invocation only. Scoped
 * keys are stored without their prefix in their own row and carry it again when state is read.
 */
import { AgentloomError } from '../../core/errors.js';
import type { StateAppend } from '../../core/event.js';

/** The state scopes of agentloom. */
export type StateScope = 'session' | 'app' | 'user' | 'temp';

/** Prefix of each non-session scope. */
export const SCOPE_PREFIX = { app: 'app:', user: 'user:', temp: 'temp:' } as const;

type Json = Record<string, unknown>;

/** Which scope a key belongs to and its name inside that scope. */
export function scopeOf(key: string): { scope: StateScope; name: string } {
  for (const scope of ['app', 'user', 'temp'] as const) {
    const prefix = SCOPE_PREFIX[scope];
    if (key.startsWith(prefix)) return { scope, name: key.slice(prefix.length) };
  }
  return { scope: 'session', name: key };
}

/** A state delta split by scope, with prefixes removed. */
export type ScopedDelta = Record<StateScope, Json>;

/** Splits a `stateDelta` by scope. Throws VALIDATION when the delta is not a plain object. */
export function splitDelta(delta: unknown, field = 'stateDelta'): ScopedDelta {
  assertPlainObject(delta, field);
  const out: ScopedDelta = { session: {}, app: {}, user: {}, temp: {} };
  for (const [key, value] of Object.entries(delta)) {
    const { scope, name } = scopeOf(key);
    if (name === '') {
      throw new AgentloomError(
        'VALIDATION',
        `${field}: key "${key}" has a scope prefix but no name; write "${key}name"`,
        {
          details: { field, key },
        },
      );
    }
    out[scope][name] = value;
  }
  return out;
}

/** Groups list appends by scope, prefixes removed. */
export function splitAppends(appends: readonly StateAppend[]): Record<StateScope, StateAppend[]> {
  const out: Record<StateScope, StateAppend[]> = { session: [], app: [], user: [], temp: [] };
  for (const append of appends) {
    const { scope, name } = scopeOf(append.key);
    out[scope].push({ key: name, value: append.value });
  }
  return out;
}

/**
 * Applies a delta and list appends to one scope's state, returning a new object. An append to a key that holds a
 * non-list starts a list containing the old value, so nothing is ever dropped.
 */
export function applyToState(state: Json, delta: Json, appends: readonly StateAppend[]): Json {
  const next: Json = { ...state, ...delta };
  for (const { key, value } of appends) {
    const current = next[key];
    next[key] =
      current === undefined || current === null
        ? [value]
        : Array.isArray(current)
          ? [...current, value]
          : [current, value];
  }
  return next;
}

/** Merges the scopes into the single view agents see (`app:x`, `user:x`, `temp:x` and plain keys). */
export function mergeScopes(scopes: Partial<Record<StateScope, Json>>): Json {
  const merged: Json = { ...(scopes.session ?? {}) };
  for (const scope of ['app', 'user', 'temp'] as const) {
    for (const [key, value] of Object.entries(scopes[scope] ?? {})) merged[SCOPE_PREFIX[scope] + key] = value;
  }
  return merged;
}

/** True when any scope of the delta or appends has something to write. */
export function touches(
  delta: ScopedDelta,
  appends: Record<StateScope, StateAppend[]>,
  scope: StateScope,
): boolean {
  return Object.keys(delta[scope]).length > 0 || appends[scope].length > 0;
}

/** Throws VALIDATION unless `value` is a plain JSON object. */
export function assertPlainObject(value: unknown, field: string): asserts value is Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    throw new AgentloomError(
      'VALIDATION',
      `${field} must be an object such as {"key": "value"}, got ${got}`,
      {
        details: { field },
      },
    );
  }
}
