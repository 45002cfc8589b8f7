import { randomUUID } from 'node:crypto';

/** A new random id with an optional readable prefix (`inv_…`, `ses_…`). */
export function newId(prefix?: string): string {
  const id = randomUUID();
  return prefix === undefined ? id : `${prefix}_${id}`;
}
