/** The credentials table: sealed secrets by (app, user, credential key); sealing is the caller's (engine/). */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from './database.js';
import { credentials } from './schema.js';

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
