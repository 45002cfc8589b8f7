import { sql } from 'drizzle-orm';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { join } from 'node:path';
import { packageRoot } from '../core/package-root.js';
import type { Database } from './database.js';

/** The directory of the committed drizzle-kit migrations. */
export function migrationsFolder(): string {
  return join(packageRoot(), 'migrations');
}

/** Arbitrary but fixed key of the advisory lock that serialises concurrent `migrate` calls. */
const MIGRATE_LOCK_KEY = 7_362_541_001;

/**
 * Applies every committed migration that the database has not seen yet; a second run changes nothing.
 * Safe to call from several processes at once on PostgreSQL (an advisory lock serialises them).
 */
export async function migrate(database: Database): Promise<void> {
  const migrationsDir = migrationsFolder();
  if (database.kind === 'pglite') {
    await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder: migrationsDir });
    return;
  }
  const db = database.db as unknown as NodePgDatabase;
  await db.transaction(async (tx) => {
    // A transaction-level lock: held until the migrations commit, then released even if this process dies.
    await tx.execute(sql`select pg_advisory_xact_lock(${MIGRATE_LOCK_KEY})`);
    await migratePg(tx as unknown as NodePgDatabase, { migrationsFolder: migrationsDir });
  });
}
