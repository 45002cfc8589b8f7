/**
 * OAuth2 answers to `auth` pauses: the provider's callback (`GET /v1/auth/callback?state&code`, or the same URL
 * pasted as `authResponseUri` in a function response) is checked against the pending request its state names and
 * the code is redeemed at the token URL the tool declared, before the answer's transaction (engine/runs/resume.ts)
 * stores the token. A state that does not verify, names another call, or names a call already answered is refused
 * with nothing stored: a consent is used once.
 */
import { AgentloomError } from '../../core/errors.js';
import type { Db } from '../../store/db/database.js';
import { getInvocation } from '../../store/repos/invocations.js';
import { findToolRequest } from '../../store/repos/tool-requests.js';
import { askedAuth, credentialKeyOf, type AuthCredential } from '../../tools/auth.js';
import { missingSecretKey, type CredentialVault } from '../auth/credential-vault.js';
import { exchangeCode, readState, redirectUriOf } from '../auth/oauth2.js';
import { authConfigFor, type DeclaredAuth } from '../apps/registry.js';
import type { FunctionResponseInput } from './resume.js';

/** What redeeming needs from the engine. */
export interface AuthAnswerDeps {
  db: Db;
  vault: CredentialVault | undefined;
  auths: readonly DeclaredAuth[];
  /** Test fault points (a crash between the exchange and the store). */
  fault: (point: string, info: { invocationId: string; path: string; attempt: number }) => Promise<void>;
}

function refused(message: string, field: string): AgentloomError {
  return new AgentloomError('VALIDATION', message, { details: { field } });
}

/** What a refused redirect tells the user to do: the state is not spent, so its link works again. */
const TRY_AGAIN = 'the call still waits: open its authorization URL again';

/** Parameters of a redirect that a provider sends once at most (RFC 6749 4.1.2; RFC 9207's `iss`). */
const ONCE = ['state', 'code', 'error', 'error_description', 'error_uri', 'iss'] as const;

/**
 * What is wrong with a provider's redirect (its query) before anything is redeemed, as a 400 naming the parameter
 * (`field`: that parameter, or `fieldOf` it): one given twice, the provider's `error` (with its description), or
 * no code. Undefined for a redirect with one code. This is the user's link, not a failure to retry: nothing is
 * stored, and the call waits for a good one.
 */
export function redirectRefusal(
  query: URLSearchParams,
  fieldOf: (parameter: string) => string = (parameter) => parameter,
): AgentloomError | undefined {
  const twice = ONCE.find((name) => query.getAll(name).length > 1);
  if (twice) return refused(`the redirect gives ${twice} more than once: ${TRY_AGAIN}`, fieldOf(twice));
  const error = query.get('error');
  if (error !== null) {
    const description = query.get('error_description');
    const why = `${error || 'no reason given'}${description ? `: ${description}` : ''}`;
    return refused(`the provider did not authorize (${why}): ${TRY_AGAIN}`, fieldOf('error'));
  }
  if (!query.get('code')) {
    return refused(`the redirect has no authorization code (code=…): ${TRY_AGAIN}`, fieldOf('code'));
  }
  return undefined;
}

/**
 * The answer a provider's callback stands for: the pending request its `state` names, answered with the callback
 * URL. Refuses (400) a callback without a state, or whose state this deployment did not make.
 */
export function callbackAnswer(
  vault: CredentialVault | undefined,
  query: URLSearchParams,
): { invocationId: string; response: FunctionResponseInput } {
  if (!vault) throw missingSecretKey();
  const state = query.get('state');
  if (!state) throw refused('the callback has no state: open the authorization URL the run shows', 'state');
  const named = readState(vault.box, state);
  if (!named) throw refused('this authorization is unknown (its state was not issued here)', 'state');
  const uri = `https://callback.invalid/?${query.toString()}`;
  return {
    invocationId: named.invocationId,
    response: { id: named.requestId, response: { authResponseUri: uri } },
  };
}

/**
 * For an answer carrying `authResponseUri`, the credential its code redeems; undefined for other answers. The
 * request must be a pending `auth` request of an OAuth2 authorization-code tool, and the URL's state its own.
 */
export async function redeemAuthAnswer(
  deps: AuthAnswerDeps,
  input: FunctionResponseInput,
  invocationId: string | undefined,
): Promise<AuthCredential | undefined> {
  const uri = callbackUriOf(input?.response);
  if (uri === undefined || typeof input.id !== 'string') return undefined;
  const request = await findToolRequest(deps.db, input.id, invocationId);
  if (!request || request.kind !== 'auth') return undefined; // answerTx says what is wrong
  if (request.status !== 'pending') {
    throw new AgentloomError(
      'CONFLICT',
      `call "${input.id}" was already answered (${request.status}): an authorization is used once`,
      { details: { callId: input.id } },
    );
  }
  if (!deps.vault) throw missingSecretKey();
  let callback: URL;
  try {
    callback = new URL(String(uri));
  } catch {
    throw refused(
      'authResponseUri must be the full URL the provider redirected to',
      'response.authResponseUri',
    );
  }
  const named = readState(deps.vault.box, callback.searchParams.get('state') ?? '');
  if (!named || named.requestId !== request.callId || named.invocationId !== request.invocationId) {
    throw refused(
      `the authorization's state does not belong to call "${input.id}": use the authorization URL this call shows`,
      'response.authResponseUri',
    );
  }
  const malformed = redirectRefusal(callback.searchParams, () => 'response.authResponseUri');
  if (malformed) throw malformed;
  const invocation = await getInvocation(deps.db, request.invocationId);
  const asked = askedAuth((request.request as { auth?: unknown }).auth);
  // The declared config (token URL, client secret), never anything from the answer or the stored request.
  const auth = invocation && authConfigFor(deps.auths, invocation.app, credentialKeyOf(asked));
  if (!auth) {
    throw new AgentloomError(
      'CONFLICT',
      `no tool of this deployment declares the credential "${credentialKeyOf(asked)}" any more`,
      { details: { callId: input.id } },
    );
  }
  const credential = await exchangeCode(
    deps.vault.box,
    auth,
    callback.searchParams,
    redirectUriOf(auth, deps.vault.publicUrl),
  );
  await deps.fault('after-code-exchange', {
    invocationId: request.invocationId,
    path: request.nodePath,
    attempt: 0,
  });
  return credential;
}

/**
 * The callback URL an answer carries: `authResponseUri` at the top, or where ADK's clients put it (the auth config
 * sent back, with `exchangedAuthCredential.oauth2.authResponseUri` filled in).
 */
function callbackUriOf(response: Record<string, unknown> | undefined): unknown {
  if (response?.authResponseUri !== undefined) return response.authResponseUri;
  const exchanged = response?.exchangedAuthCredential as
    { oauth2?: { authResponseUri?: unknown } } | undefined;
  return exchanged?.oauth2?.authResponseUri;
}
