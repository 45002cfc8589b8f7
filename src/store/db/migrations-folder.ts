/** Where the committed drizzle-kit migrations live, and a fingerprint of them. */
import { createHash } from 'node:crypto';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { join } from 'node:path';
import { packageRoot } from '../../core/package-root.js';

/** The directory of the committed drizzle-kit migrations. */
export function migrationsFolder(): string {
  return join(packageRoot(), 'migrations');
}

/**
 * A hex digest of every committed migration (drizzle's hash of each file's SQL, in journal order): it changes when a
 * migration is added or its text changes, so whatever was built from the migrations can be keyed by it.
 */
export function migrationsDigest(): string {
  const files = readMigrationFiles({ migrationsFolder: migrationsFolder() });
  return createHash('sha256')
    .update(files.map((m) => m.hash).join('\n'))
    .digest('hex');
}
