/**
 * Users' tool credentials at rest (the auth gate): sealed with the deployment's SecretBox before they reach the
 * credentials table, bound to their row (app, user, key) so a sealed value moved to another user's row does not
 * open. The only place that sees a credential in the clear besides the tool that receives it.
 */
import { AgentloomError } from '../core/errors.js';
import { MAKE_KEY_HINT, type SecretBox } from '../core/secret-box.js';
import type { Db } from '../store/database.js';
import { findCredential, upsertCredentialTx } from '../store/credentials.js';
import { authCredentialSchema, credentialKeyOf, type AuthCredential, type ToolAuth } from '../tools/auth.js';

/** The error of a deployment asked to store or use a credential without a key to seal it with. */
export function missingSecretKey(): AgentloomError {
  return new AgentloomError(
    'CONFIG',
    `a tool needs a user credential, and credentials are stored encrypted: set AGENTLOOM_SECRET_KEY (${MAKE_KEY_HINT})`,
    { details: { field: 'AGENTLOOM_SECRET_KEY' } },
  );
}

/** The credential `auth` asks for of a run's user (app, user), opened; undefined when they have none. */
export function loadCredential(
  vault: CredentialVault | undefined,
  db: Db,
  user: { app: string; userId: string },
  auth: ToolAuth,
): Promise<AuthCredential | undefined> {
  if (!vault) throw missingSecretKey();
  return vault.load(db, { ...user, credentialKey: credentialKeyOf(auth) });
}

/** Whose credential, for which key. */
export interface CredentialOwner {
  app: string;
  userId: string;
  credentialKey: string;
}

function context(owner: CredentialOwner): string {
  return JSON.stringify([owner.app, owner.userId, owner.credentialKey]);
}

/** Seals and stores, loads and opens users' credentials (see the file's comment). */
export class CredentialVault {
  constructor(private readonly box: SecretBox) {}

  /** Stores `credential` for `owner` (replacing theirs), sealed. */
  async saveTx(tx: Db, owner: CredentialOwner, credential: AuthCredential, expiresAt?: Date): Promise<void> {
    const secret = this.box.seal(JSON.stringify(credential), context(owner));
    await upsertCredentialTx(tx, {
      ...owner,
      authType: credential.authType,
      secret,
      expiresAt: expiresAt ?? null,
    });
  }

  /** `owner`'s credential, opened; undefined when none is stored. */
  async load(db: Db, owner: CredentialOwner): Promise<AuthCredential | undefined> {
    const row = await findCredential(db, owner.app, owner.userId, owner.credentialKey);
    if (!row) return undefined;
    return authCredentialSchema.parse(JSON.parse(this.box.open(row.secret, context(owner))));
  }
}
