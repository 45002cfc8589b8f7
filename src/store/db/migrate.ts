import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { queryRows, type Database, type Db } from './database.js';
import { migrationsFolder } from './migrations-folder.js';

export { migrationsFolder } from './migrations-folder.js';

/** Arbitrary but fixed key of the advisory lock that serialises concurrent `migrate` calls. */
const MIGRATE_LOCK_KEY = 7_362_541_001;

async function appliedHashes(db: Db): Promise<Set<string>> {
  const exists = await queryRows<{ present: boolean }>(
    db,
    sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`,
  );
  if (!exists[0]?.present) return new Set();
  const rows = await queryRows<{ hash: string }>(db, sql`select hash from drizzle.__drizzle_migrations`);
  return new Set(rows.map((r) => r.hash));
}

/**
 * Applies every committed migration that the database has not seen yet; a second run changes nothing.
 * Safe to call from several processes at once on PostgreSQL (an advisory lock serialises them).
 * Returns the tags of the migrations it applied (empty when the schema was up to date).
 */
export async function migrate(database: Database): Promise<string[]> {
  const migrationsDir = migrationsFolder();
  const files = readMigrationFiles({ migrationsFolder: migrationsDir });
  const journal = JSON.parse(readFileSync(join(migrationsDir, 'meta', '_journal.json'), 'utf8')) as {
    entries: { tag: string }[];
  };
  const pendingOf = (applied: Set<string>) =>
    files.flatMap((m, i) => (applied.has(m.hash) ? [] : [journal.entries[i]?.tag ?? m.hash]));
  if (database.kind === 'pglite') {
    const pending = pendingOf(await appliedHashes(database.db));
    await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder: migrationsDir });
    return pending;
  }
  const db = database.db as unknown as NodePgDatabase;
  return db.transaction(async (tx) => {
    // A transaction-level lock: held until the migrations commit, then released even if this process dies.
    await tx.execute(sql`select pg_advisory_xact_lock(${MIGRATE_LOCK_KEY})`);
    const pending = pendingOf(await appliedHashes(tx as unknown as Db));
    await migratePg(tx as unknown as NodePgDatabase, { migrationsFolder: migrationsDir });
    return pending;
  });
}
