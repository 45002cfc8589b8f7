/**
 * The secret scan of the auth-gate tests: every row of the tables a run writes (events, sessions, invocations,
 * tool_requests, nodes, credentials) as JSON text, and the checks that no planted secret appears in any of them
 * (also hex-encoded, as a bytea would print), in any API answer or in any log line.
 */
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import type { Engine } from '../../../src/index.js';

/** A row of a scanned table, as JSON text. */
export interface ScannedRow {
  t: string;
  r: string;
}

/** Every row of the tables a run writes. */
export async function scannedRows(engine: Engine): Promise<ScannedRow[]> {
  const { rows } = (await engine.store.db.execute(
    sql.raw(`select 'events' as t, row_to_json(x)::text as r from events x
       union all select 'sessions', row_to_json(x)::text from sessions x
       union all select 'invocations', row_to_json(x)::text from invocations x
       union all select 'tool_requests', row_to_json(x)::text from tool_requests x
       union all select 'nodes', row_to_json(x)::text from nodes x
       union all select 'credentials', row_to_json(x)::text from credentials x`),
  )) as unknown as { rows: ScannedRow[] };
  return rows;
}

/** No secret of `secrets` in `rows`, `answers` (API response bodies) or `logLines`. */
export function expectNoSecrets(
  secrets: readonly string[],
  { rows, answers, logLines }: { rows: ScannedRow[]; answers: string[]; logLines: string[] },
): void {
  for (const secret of secrets) {
    const hex = Buffer.from(secret).toString('hex');
    for (const row of rows) {
      expect(row.r, `${row.t} holds a secret`).not.toContain(secret);
      expect(row.r, `${row.t} holds a secret (as hex)`).not.toContain(hex);
    }
    for (const text of answers) expect(text).not.toContain(secret);
    for (const line of logLines) expect(line).not.toContain(secret);
  }
}
