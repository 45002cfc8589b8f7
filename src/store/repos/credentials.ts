/** The credentials table: sealed secrets by (app, user, credential key); sealing is the caller's (engine/). */
import { and, asc, eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { credentials } from '../db/schema.js';

export type CredentialRow = typeof credentials.$inferSelect;

/** The row of (app, user, key). */
function ownerIs(app: string, userId: string, credentialKey: string) {
  return and(
    eq(credentials.app, app),
    eq(credentials.userId, userId),
    eq(credentials.credentialKey, credentialKey),
  );
}

/** Stores (or replaces) a user's sealed credential. */
export async function upsertCredentialTx(
  tx: Db,
  row: {
    app: string;
    userId: string;
    credentialKey: string;
    authType: string;
    secret: Uint8Array;
    expiresAt?: Date | null;
  },
): Promise<void> {
  await tx
    .insert(credentials)
    .values({ ...row, expiresAt: row.expiresAt ?? null })
    .onConflictDoUpdate({
      target: [credentials.app, credentials.userId, credentials.credentialKey],
      set: {
        authType: row.authType,
        secret: row.secret,
        expiresAt: row.expiresAt ?? null,
        updatedAt: sql`now()`,
      },
    });
}

/** A user's sealed credential, if stored. */
export async function findCredential(
  db: Db,
  app: string,
  userId: string,
  credentialKey: string,
): Promise<CredentialRow | undefined> {
  const [row] = await db
    .select()
    .from(credentials)
    .where(ownerIs(app, userId, credentialKey));
  return row;
}

/** Deletes a user's credential; true when there was one. */
export async function deleteCredentialTx(
  tx: Db,
  app: string,
  userId: string,
  credentialKey: string,
): Promise<boolean> {
  const rows = await tx
    .delete(credentials)
    .where(ownerIs(app, userId, credentialKey))
    .returning({ key: credentials.credentialKey });
  return rows.length > 0;
}

/** A stored credential without its secret: what an operator may be shown. */
export interface CredentialSummaryRow {
  app: string;
  userId: string;
  credentialKey: string;
  authType: string;
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Which of a user's credentials: all of them, those of one app, and/or the one under one key. */
export interface CredentialFilter {
  userId: string;
  app?: string;
  credentialKey?: string;
}

function filterOf(filter: CredentialFilter): SQL | undefined {
  return and(
    eq(credentials.userId, filter.userId),
    filter.app === undefined ? undefined : eq(credentials.app, filter.app),
    filter.credentialKey === undefined ? undefined : eq(credentials.credentialKey, filter.credentialKey),
  );
}

/** A user's stored credentials, by app then key; the secret column is never read. */
export async function listCredentials(db: Db, filter: CredentialFilter): Promise<CredentialSummaryRow[]> {
  return db
    .select({
      app: credentials.app,
      userId: credentials.userId,
      credentialKey: credentials.credentialKey,
      authType: credentials.authType,
      expiresAt: credentials.expiresAt,
      createdAt: credentials.createdAt,
      updatedAt: credentials.updatedAt,
    })
    .from(credentials)
    .where(filterOf(filter))
    .orderBy(asc(credentials.app), asc(credentials.credentialKey));
}

/** Deletes the credentials `filter` selects (one statement); returns how many there were. */
export async function deleteCredentialsTx(tx: Db, filter: CredentialFilter): Promise<number> {
  const rows = await tx
    .delete(credentials)
    .where(filterOf(filter))
    .returning({ key: credentials.credentialKey });
  return rows.length;
}

/**
 * Takes the transaction-scoped advisory lock of one credential (named by `owner`, any stable text): one
 * transaction at a time renews it, across all processes on the database.
 */
export async function lockCredentialTx(tx: Db, owner: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${owner}, 0))`);
}
