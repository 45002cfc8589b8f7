import type { Db } from './database.js';

/** SQLSTATEs after which the whole transaction may simply be run again. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);
const MAX_TX_ATTEMPTS = 8;

function sqlState(err: unknown): string | undefined {
  for (let e: unknown = err; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** True for a deadlock or serialization failure: the statement or transaction wrote nothing and may be re-run. */
export function isRetryableSqlError(err: unknown): boolean {
  const state = sqlState(err);
  return state !== undefined && RETRYABLE_SQLSTATES.has(state);
}

/**
 * Runs `work` in one transaction, re-running it when Postgres aborts it for a deadlock or a serialization
 * failure (the transaction wrote nothing then). `work` must not have side effects outside the transaction.
 */
export async function inTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(async (tx) => work(tx as unknown as Db));
    } catch (err) {
      const state = sqlState(err);
      if (attempt >= MAX_TX_ATTEMPTS || state === undefined || !RETRYABLE_SQLSTATES.has(state)) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }
}
