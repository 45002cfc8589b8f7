/**
 * Users' tool credentials at rest (the auth gate): sealed with the deployment's SecretBox before they reach the
 * credentials table, bound to their row (app, user, key) so a sealed value moved to another user's row does not
 * open. The only place that sees a credential in the clear besides the tool that receives it.
 */
import { AgentloomError } from '../../core/errors.js';
import { MAKE_KEY_HINT, type SecretBox } from '../../core/secret-box.js';
import type { Db } from '../../store/db/database.js';
import {
  deleteCredentialTx,
  findCredential,
  lockCredentialTx,
  upsertCredentialTx,
} from '../../store/repos/credentials.js';
import { inTransaction } from '../../store/db/tx.js';
import {
  authCredentialSchema,
  credentialKeyOf,
  fixedCredential,
  isExpiring,
  oauthFlow,
  publicAuthConfig,
  type AuthCredential,
  type ToolAuth,
} from '../../tools/auth.js';
import type { RunCredentials } from '../../agents/context.js';
import {
  authorizationRequest,
  clientCredentialsToken,
  expiryOf,
  OAuthRefused,
  redirectUriOf,
  refreshCredential,
} from './oauth2.js';

/** The error of a deployment asked to store or use a credential without a key to seal it with. */
export function missingSecretKey(): AgentloomError {
  return new AgentloomError(
    'CONFIG',
    `a tool needs a user credential, and credentials are stored encrypted: set AGENTLOOM_SECRET_KEY (${MAKE_KEY_HINT})`,
    { details: { field: 'AGENTLOOM_SECRET_KEY' } },
  );
}

/**
 * The credential `auth` asks for of a run's user (app, user), ready to use: a fixed one the config carries, else the
 * stored one — an OAuth2 token near its expiry refreshed first (a client-credentials token fetched when there is
 * none); undefined when the user must be asked.
 */
export function loadCredential(
  vault: CredentialVault | undefined,
  db: Db,
  user: { app: string; userId: string },
  auth: ToolAuth,
): Promise<AuthCredential | undefined> {
  const fixed = fixedCredential(auth);
  if (fixed) return Promise.resolve(fixed);
  if (!vault) throw missingSecretKey();
  return vault.usable(db, { ...user, credentialKey: credentialKeyOf(auth) }, auth);
}

/** A run's view of its user's credentials: what the gate in agents/llm/tool-call.ts uses. */
export function runCredentials(
  vault: CredentialVault | undefined,
  db: Db,
  run: { app: string; userId: string; invocationId: string },
): RunCredentials {
  const owner = (auth: ToolAuth) => ({
    app: run.app,
    userId: run.userId,
    credentialKey: credentialKeyOf(auth),
  });
  return {
    get: (auth) => loadCredential(vault, db, run, auth),
    revoke: async (auth) => {
      if (vault) await vault.revoke(db, owner(auth));
    },
    requestConfig: async (auth, requestId) => {
      if (oauthFlow(auth) !== 'authorizationCode') return publicAuthConfig(auth);
      if (!vault) throw missingSecretKey();
      const redirectUri = redirectUriOf(auth, vault.publicUrl);
      const ids = { invocationId: run.invocationId, requestId };
      return publicAuthConfig(auth, await authorizationRequest(vault.box, auth, ids, redirectUri));
    },
  };
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
  /** `publicUrl`: where users reach the API (the OAuth2 callback is under it), when tools do not name one. */
  constructor(
    readonly box: SecretBox,
    readonly publicUrl?: string,
  ) {}

  /** Stores `credential` for `owner` (replacing theirs), sealed; an OAuth2 token's expiry goes in the clear. */
  async saveTx(tx: Db, owner: CredentialOwner, credential: AuthCredential): Promise<void> {
    const secret = this.box.seal(JSON.stringify(credential), context(owner));
    await upsertCredentialTx(tx, {
      ...owner,
      authType: credential.authType,
      secret,
      expiresAt: expiryOf(credential) ?? null,
    });
  }

  /** `owner`'s credential, opened; undefined when none is stored. */
  async load(db: Db, owner: CredentialOwner): Promise<AuthCredential | undefined> {
    const row = await findCredential(db, owner.app, owner.userId, owner.credentialKey);
    if (!row) return undefined;
    return authCredentialSchema.parse(JSON.parse(this.box.open(row.secret, context(owner))));
  }

  /** Deletes `owner`'s credential (refused by the service it is for). */
  async revoke(db: Db, owner: CredentialOwner): Promise<void> {
    await deleteCredentialTx(db, owner.app, owner.userId, owner.credentialKey);
  }

  /**
   * `owner`'s credential ready to use (see {@link loadCredential}). A token is refreshed (or a client-credentials
   * token fetched) once at a time per credential across all processes: under a transaction-scoped advisory lock on
   * the owner, re-read inside the lock, so a caller that waited finds the token another one just stored. A
   * refresh the provider refuses deletes the credential: the user is asked again.
   */
  async usable(db: Db, owner: CredentialOwner, auth: ToolAuth): Promise<AuthCredential | undefined> {
    const stored = await this.load(db, owner);
    if (stored && !isExpiring(stored)) return stored;
    const flow = oauthFlow(auth);
    if (!stored && flow !== 'clientCredentials') return undefined;
    return inTransaction(db, async (tx) => {
      await lockCredentialTx(tx, context(owner));
      const current = await this.load(tx, owner);
      if (current && !isExpiring(current)) return current;
      const refreshable = current?.authType === 'oauth2' && current.oauth2.refreshToken !== undefined;
      let fresh: AuthCredential | undefined;
      try {
        if (current && refreshable) fresh = await refreshCredential(auth, current);
        else if (flow === 'clientCredentials') fresh = await clientCredentialsToken(auth);
      } catch (err) {
        // A refused client (no user could fix that by consenting) is the tool's error; a refused refresh, not.
        if (!(err instanceof OAuthRefused) || (flow === 'clientCredentials' && !refreshable)) throw err;
      }
      if (!fresh) {
        // Expired with no way to renew it, or the provider refused: the user is asked again.
        await deleteCredentialTx(tx, owner.app, owner.userId, owner.credentialKey);
        return undefined;
      }
      await this.saveTx(tx, owner, fresh);
      return fresh;
    });
  }
}
