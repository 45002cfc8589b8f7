/**
 * OAuth2 for the auth gate, as a client of the provider a tool names (oauth4webapi does the protocol):
 * the authorization URL a user is sent to (authorization code with PKCE, S256), the code exchange, refresh and
 * the client-credentials grant.
 *
 * Nothing of a consent is stored before it is answered: `state` is `<invocation>.<request>.<mac>` with an HMAC
 * under the deployment's key, so a callback names the pending request it answers and a forged one does not verify;
 * the PKCE verifier is an HMAC of the state under another derived key, so only this deployment can redeem a code.
 * A state is single use because the request it names is answered once (engine/runs/resume.ts). Token URLs come only
 * from the tool's declared config, never from a request or an answer.
 */
import { timingSafeEqual } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { AgentloomError } from '../../core/errors.js';
import type { SecretBox } from '../../core/secret-box.js';
import type { AuthCredential, AuthorizationRequest, ToolAuth } from '../../tools/auth.js';

const STATE_PURPOSE = 'oauth2 state';
const PKCE_PURPOSE = 'oauth2 pkce verifier';
/** How long a token endpoint may take. */
const TOKEN_TIMEOUT_MS = 30_000;

/** The provider refused a grant (`invalid_grant`, a code used twice, a revoked refresh token, …). */
export class OAuthRefused extends AgentloomError {
  constructor(
    readonly error: string,
    what: string,
  ) {
    super('VALIDATION', `the OAuth2 provider refused ${what} (${error})`, { details: { oauthError: error } });
    this.name = 'OAuthRefused';
  }
}

interface Provider {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  clientAuth: oauth.ClientAuth;
  options: oauth.TokenEndpointRequestOptions;
}

function providerOf(auth: ToolAuth): Provider {
  const scheme = auth.authScheme;
  const raw = auth.rawAuthCredential;
  if (scheme.type !== 'oauth2' || raw?.authType !== 'oauth2') {
    throw new AgentloomError('INTERNAL', 'an OAuth2 operation on a config that is not OAuth2');
  }
  const flow = scheme.flows.authorizationCode ?? scheme.flows.clientCredentials;
  const tokenUrl = flow?.tokenUrl as string;
  const as: oauth.AuthorizationServer = {
    issuer: new URL(tokenUrl).origin,
    token_endpoint: tokenUrl,
    authorization_endpoint: scheme.flows.authorizationCode?.authorizationUrl,
  };
  const secret = raw.oauth2.clientSecret;
  return {
    as,
    client: { client_id: raw.oauth2.clientId },
    clientAuth: secret ? oauth.ClientSecretPost(secret) : oauth.None(),
    options: {
      [oauth.allowInsecureRequests]: tokenUrl.startsWith('http:'),
      signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
    },
  };
}

function scopesOf(auth: ToolAuth): string {
  if (auth.authScheme.type !== 'oauth2') return '';
  const flow = auth.authScheme.flows.authorizationCode ?? auth.authScheme.flows.clientCredentials;
  return Object.keys(flow?.scopes ?? {}).join(' ');
}

/** Where the provider sends the user back: the tool's registered redirect URI, else this deployment's callback. */
export function redirectUriOf(auth: ToolAuth, publicUrl: string | undefined): string {
  const raw = auth.rawAuthCredential;
  const declared = raw?.authType === 'oauth2' ? raw.oauth2.redirectUri : undefined;
  if (declared) return declared;
  if (publicUrl) return new URL('/v1/auth/callback', publicUrl).toString();
  throw new AgentloomError(
    'CONFIG',
    'an OAuth2 authorization-code tool needs a redirect URI: set rawAuthCredential.oauth2.redirectUri, or AGENTLOOM_PUBLIC_URL (the address users reach the API at; the callback is <url>/v1/auth/callback)',
    { details: { field: 'AGENTLOOM_PUBLIC_URL' } },
  );
}

/** The state of a request: names it, and only this deployment can make one. */
function stateOf(box: SecretBox, invocationId: string, requestId: string): string {
  const named = `${invocationId}.${requestId}`;
  return `${named}.${box.mac(STATE_PURPOSE, named)}`;
}

/** The pending request a state names, when it was made by this deployment; undefined for a forged one. */
export function readState(
  box: SecretBox,
  state: string,
): { invocationId: string; requestId: string } | undefined {
  const parts = state.split('.');
  if (parts.length !== 3 || parts.some((p) => p === '')) return undefined;
  const [invocationId, requestId, mac] = parts as [string, string, string];
  const expected = Buffer.from(box.mac(STATE_PURPOSE, `${invocationId}.${requestId}`));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return { invocationId, requestId };
}

/** The authorization URL a user opens to consent to the request `requestId` of an invocation. */
export async function authorizationRequest(
  box: SecretBox,
  auth: ToolAuth,
  ids: { invocationId: string; requestId: string },
  redirectUri: string,
): Promise<AuthorizationRequest> {
  const scheme = auth.authScheme;
  const raw = auth.rawAuthCredential;
  if (scheme.type !== 'oauth2' || !scheme.flows.authorizationCode || raw?.authType !== 'oauth2') {
    throw new AgentloomError(
      'INTERNAL',
      'an authorization URL for a config without the authorization-code flow',
    );
  }
  const state = stateOf(box, ids.invocationId, ids.requestId);
  const url = new URL(scheme.flows.authorizationCode.authorizationUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', raw.oauth2.clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  const scope = scopesOf(auth);
  if (scope) url.searchParams.set('scope', scope);
  url.searchParams.set('state', state);
  url.searchParams.set(
    'code_challenge',
    await oauth.calculatePKCECodeChallenge(box.mac(PKCE_PURPOSE, state)),
  );
  url.searchParams.set('code_challenge_method', 'S256');
  return { authUri: url.toString(), state, redirectUri };
}

function credentialOf(token: oauth.TokenEndpointResponse, previous?: AuthCredential): AuthCredential {
  const refreshToken =
    token.refresh_token ?? (previous?.authType === 'oauth2' ? previous.oauth2.refreshToken : undefined);
  return {
    authType: 'oauth2',
    oauth2: {
      accessToken: token.access_token,
      tokenType: token.token_type,
      ...(refreshToken ? { refreshToken } : {}),
      ...(token.expires_in !== undefined
        ? { expiresAt: Math.floor(Date.now() / 1000) + token.expires_in }
        : {}),
      ...(token.scope ? { scope: token.scope } : {}),
    },
  };
}

/** Runs a grant; the provider's refusal becomes {@link OAuthRefused} (its error code, never a token). */
async function grant(
  what: string,
  run: () => Promise<oauth.TokenEndpointResponse>,
): Promise<oauth.TokenEndpointResponse> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError || err instanceof oauth.AuthorizationResponseError) {
      throw new OAuthRefused(err.error, what);
    }
    if (err instanceof oauth.WWWAuthenticateChallengeError) throw new OAuthRefused('invalid_client', what);
    throw new AgentloomError(
      'TOOL_ERROR',
      `the OAuth2 token endpoint could not be used for ${what}: ${messageOf(err)}`,
      {
        retryable: true,
        cause: err,
      },
    );
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The parameters of a provider's redirect as oauth4webapi checks them (the state, RFC 9207's `iss`, the provider's
 * error, no implicit flow). What it refuses is the redirect's fault, never a failure to retry: a 400 naming the
 * answer's `response.authResponseUri`, which a redirect always is (the callback route makes it one).
 */
function checkedRedirect(
  provider: Provider,
  callback: URLSearchParams,
  state: string,
): ReturnType<typeof oauth.validateAuthResponse> {
  try {
    return oauth.validateAuthResponse(provider.as, provider.client, callback, state);
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError)
      throw new OAuthRefused(err.error, 'the authorization');
    throw new AgentloomError(
      'VALIDATION',
      `the provider's redirect is not valid (${messageOf(err)}): the call still waits: open its authorization URL again`,
      { details: { field: 'response.authResponseUri' }, cause: err },
    );
  }
}

/**
 * Redeems the authorization code of a callback (its full query: `state`, `code` or `error`) for the request its
 * state names, at the tool's token URL.
 */
export async function exchangeCode(
  box: SecretBox,
  auth: ToolAuth,
  callback: URLSearchParams,
  redirectUri: string,
): Promise<AuthCredential> {
  const state = callback.get('state') ?? '';
  const provider = providerOf(auth);
  const params = checkedRedirect(provider, callback, state);
  const token = await grant('the authorization code', async () => {
    const response = await oauth.authorizationCodeGrantRequest(
      provider.as,
      provider.client,
      provider.clientAuth,
      params,
      redirectUri,
      box.mac(PKCE_PURPOSE, state),
      provider.options,
    );
    return oauth.processAuthorizationCodeResponse(provider.as, provider.client, response);
  });
  return credentialOf(token);
}

/** A new access token for an expiring one, with its refresh token. */
export async function refreshCredential(auth: ToolAuth, credential: AuthCredential): Promise<AuthCredential> {
  if (credential.authType !== 'oauth2' || !credential.oauth2.refreshToken) {
    throw new OAuthRefused('no_refresh_token', 'a refresh (the credential has no refresh token)');
  }
  const refreshToken = credential.oauth2.refreshToken;
  const provider = providerOf(auth);
  const token = await grant('the refresh token', async () => {
    const response = await oauth.refreshTokenGrantRequest(
      provider.as,
      provider.client,
      provider.clientAuth,
      refreshToken,
      provider.options,
    );
    return oauth.processRefreshTokenResponse(provider.as, provider.client, response);
  });
  return credentialOf(token, credential);
}

/** A token for the client itself (client-credentials grant). */
export async function clientCredentialsToken(auth: ToolAuth): Promise<AuthCredential> {
  const provider = providerOf(auth);
  const scope = scopesOf(auth);
  const token = await grant('the client credentials', async () => {
    const response = await oauth.clientCredentialsGrantRequest(
      provider.as,
      provider.client,
      provider.clientAuth,
      scope ? { scope } : {},
      provider.options,
    );
    return oauth.processClientCredentialsResponse(provider.as, provider.client, response);
  });
  return credentialOf(token);
}

/** When an OAuth2 credential expires, as a Date for the credentials table. */
export function expiryOf(credential: AuthCredential): Date | undefined {
  return credential.authType === 'oauth2' && credential.oauth2.expiresAt !== undefined
    ? new Date(credential.oauth2.expiresAt * 1000)
    : undefined;
}
