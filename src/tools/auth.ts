/**
 * What a tool declares it needs (ADK's `AuthConfig`, camelCase as ADK's wire form) and what a user answers with:
 * the schemes (an API key, HTTP bearer or basic), the credential key a stored credential is found under, the
 * public form of a config that may be shown in an event (no secret: no key, token, password or client secret),
 * and the checked answer.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { AgentloomError } from '../core/errors.js';
import { zodIssues } from '../core/validation.js';

function httpUrl(field: string) {
  return z.url({ protocol: /^https?$/, error: `${field} must be an http(s) URL` });
}

/**
 * ADK's security schemes (OpenAPI's): an API key sent in a header, query or cookie; HTTP bearer or basic; OAuth2
 * with the authorization-code flow (PKCE, S256) or the client-credentials flow.
 */
export const authSchemeSchema = z.discriminatedUnion(
  'type',
  [
    z.object({
      type: z.literal('apiKey'),
      in: z.enum(['header', 'query', 'cookie']),
      name: z.string().min(1, 'name the header, query parameter or cookie the key goes in'),
      description: z.string().optional(),
    }),
    z.object({
      type: z.literal('http'),
      scheme: z.enum(['bearer', 'basic']),
      bearerFormat: z.string().optional(),
      description: z.string().optional(),
    }),
    z.object({
      type: z.literal('oauth2'),
      flows: z
        .object({
          authorizationCode: z
            .object({
              authorizationUrl: httpUrl('authorizationUrl'),
              tokenUrl: httpUrl('tokenUrl'),
              refreshUrl: httpUrl('refreshUrl').optional(),
              scopes: z.record(z.string(), z.string()).default({}),
            })
            .optional(),
          clientCredentials: z
            .object({
              tokenUrl: httpUrl('tokenUrl'),
              refreshUrl: httpUrl('refreshUrl').optional(),
              scopes: z.record(z.string(), z.string()).default({}),
            })
            .optional(),
        })
        .refine((flows) => flows.authorizationCode ?? flows.clientCredentials, {
          error:
            'give flows.authorizationCode {authorizationUrl, tokenUrl, scopes} or flows.clientCredentials {tokenUrl, scopes}',
        }),
      description: z.string().optional(),
    }),
  ],
  {
    error:
      'authScheme.type is "apiKey" ({in, name}), "http" ({scheme: "bearer" | "basic"}) or "oauth2" ({flows: {authorizationCode | clientCredentials}})',
  },
);
export type AuthScheme = z.infer<typeof authSchemeSchema>;

const apiKeyCredential = z.object({
  authType: z.literal('apiKey'),
  apiKey: z.string().min(1, 'write the API key'),
});
const httpCredential = z.object({
  authType: z.literal('http'),
  http: z.object({
    scheme: z.enum(['bearer', 'basic']),
    credentials: z.object({
      token: z.string().min(1).optional(),
      username: z.string().min(1).optional(),
      password: z.string().min(1).optional(),
    }),
  }),
});

/** A credential as a tool receives it (ADK's `AuthCredential`, the exchanged one). */
export const authCredentialSchema = z.discriminatedUnion(
  'authType',
  [
    apiKeyCredential,
    httpCredential,
    z.object({
      authType: z.literal('oauth2'),
      oauth2: z.object({
        accessToken: z.string().min(1, 'write the access token'),
        tokenType: z.string().optional(),
        refreshToken: z.string().min(1).optional(),
        /** Seconds since the epoch (ADK's `expires_at`). */
        expiresAt: z.number().int().positive().optional(),
        scope: z.string().optional(),
      }),
    }),
  ],
  {
    error:
      'exchangedAuthCredential is {"authType": "apiKey", "apiKey": "…"}, {"authType": "http", "http": {"scheme": "bearer", "credentials": {"token": "…"}}} or {"authType": "oauth2", "oauth2": {"accessToken": "…"}}',
  },
);
export type AuthCredential = z.infer<typeof authCredentialSchema>;

/**
 * The deployment's side of a scheme (ADK's `raw_auth_credential`): for OAuth2 the client (id, secret, the redirect
 * URI registered with the provider); for an API key or HTTP scheme, a fixed credential the tool uses as it is (no
 * user is asked).
 */
export const rawAuthCredentialSchema = z.union([
  z.object({
    authType: z.literal('oauth2'),
    oauth2: z.object({
      clientId: z.string().min(1, 'write the OAuth2 client id'),
      clientSecret: z.string().min(1).optional(),
      redirectUri: httpUrl('redirectUri').optional(),
    }),
  }),
  apiKeyCredential,
  httpCredential,
]);
export type RawAuthCredential = z.infer<typeof rawAuthCredentialSchema>;

/** What a tool declares: `auth: { authScheme, rawAuthCredential?, credentialKey? }`. */
export const toolAuthSchema = z
  .strictObject({
    authScheme: authSchemeSchema,
    rawAuthCredential: rawAuthCredentialSchema.optional(),
    credentialKey: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'use letters, digits and _ . : - (at most 128), e.g. "weather_api"')
      .optional(),
  })
  .superRefine((auth, ctx) => {
    const raw = auth.rawAuthCredential;
    if (auth.authScheme.type !== 'oauth2') {
      if (raw?.authType === 'oauth2') {
        ctx.addIssue({
          code: 'custom',
          path: ['rawAuthCredential'],
          message: `an OAuth2 client goes with an "oauth2" authScheme, not "${auth.authScheme.type}"`,
        });
      }
      return;
    }
    if (raw?.authType !== 'oauth2') {
      ctx.addIssue({
        code: 'custom',
        path: ['rawAuthCredential'],
        message:
          'an oauth2 scheme needs its client: rawAuthCredential: {authType: "oauth2", oauth2: {clientId, clientSecret}}',
      });
      return;
    }
    if (!auth.authScheme.flows.authorizationCode && !raw.oauth2.clientSecret) {
      ctx.addIssue({
        code: 'custom',
        path: ['rawAuthCredential', 'oauth2', 'clientSecret'],
        message: 'the client-credentials flow needs the client secret',
      });
    }
  });
export type ToolAuth = z.infer<typeof toolAuthSchema>;

/** The OAuth2 flow a config uses (authorization code when both are given), or undefined for other schemes. */
export function oauthFlow(auth: ToolAuth): 'authorizationCode' | 'clientCredentials' | undefined {
  if (auth.authScheme.type !== 'oauth2') return undefined;
  return auth.authScheme.flows.authorizationCode ? 'authorizationCode' : 'clientCredentials';
}

/** The fixed credential a config carries (used as it is, no user asked), if any. */
export function fixedCredential(auth: ToolAuth): AuthCredential | undefined {
  const raw = auth.rawAuthCredential;
  return raw?.authType === 'apiKey' || raw?.authType === 'http' ? raw : undefined;
}

/** Leeway before `expiresAt` at which a token counts as expired (it may be used in a call that takes a while). */
export const EXPIRY_LEEWAY_SECONDS = 60;

/** Whether an OAuth2 credential is past (or within the leeway of) its expiry. */
export function isExpiring(credential: AuthCredential, nowMs = Date.now()): boolean {
  if (credential.authType !== 'oauth2' || credential.oauth2.expiresAt === undefined) return false;
  return credential.oauth2.expiresAt - EXPIRY_LEEWAY_SECONDS <= nowMs / 1000;
}

/** Checks a tool's `auth` option; the error names the field. */
export function parseToolAuth(value: unknown, tool: string): ToolAuth {
  const parsed = toolAuthSchema.safeParse(value);
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new AgentloomError('VALIDATION', `tool "${tool}": auth: ${zodIssues(parsed.error)}`, {
      details: { field: path ? `auth.${path}` : 'auth' },
    });
  }
  return parsed.data;
}

/**
 * The key a credential is stored under for a user: the declared one, else one derived from the scheme (so tools
 * with the same scheme share the user's credential, as in ADK).
 */
export function credentialKeyOf(auth: ToolAuth): string {
  if (auth.credentialKey) return auth.credentialKey;
  const scheme = auth.authScheme;
  // OAuth2: the client is part of what the credential is for (never its secret).
  const client =
    auth.rawAuthCredential?.authType === 'oauth2' ? auth.rawAuthCredential.oauth2.clientId : undefined;
  const digest = createHash('sha256')
    .update(JSON.stringify(stable(client === undefined ? scheme : { scheme, client })))
    .digest('hex')
    .slice(0, 16);
  return `${scheme.type}_${digest}`;
}

function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, stable((value as Record<string, unknown>)[k])]),
  );
}

/** Where a user is sent to consent (OAuth2 authorization code): the URL and its `state`. */
export interface AuthorizationRequest {
  authUri: string;
  state: string;
  redirectUri: string;
}

/**
 * The config as an event or a pending call may show it, never a secret: the scheme and the key; for OAuth2 the
 * client id and, with the authorization-code flow, where to consent (ADK's `exchangedAuthCredential.oauth2
 * .authUri`, carrying `state` and the PKCE challenge).
 */
export function publicAuthConfig(
  auth: ToolAuth,
  authorization?: AuthorizationRequest,
): Record<string, unknown> {
  const config: Record<string, unknown> = {
    authScheme: auth.authScheme,
    credentialKey: credentialKeyOf(auth),
  };
  const raw = auth.rawAuthCredential;
  if (raw?.authType !== 'oauth2') return config;
  const client = {
    clientId: raw.oauth2.clientId,
    ...(authorization ? { redirectUri: authorization.redirectUri } : {}),
  };
  config.rawAuthCredential = { authType: 'oauth2', oauth2: client };
  if (authorization) {
    config.exchangedAuthCredential = {
      authType: 'oauth2',
      oauth2: { ...client, authUri: authorization.authUri, state: authorization.state },
    };
  }
  return config;
}

/** What a stored public config asked for (its scheme and key), to check and file an answer by. */
export function askedAuth(config: unknown): ToolAuth {
  const { authScheme, credentialKey } = (config ?? {}) as { authScheme?: unknown; credentialKey?: unknown };
  return {
    authScheme: authSchemeSchema.parse(authScheme),
    credentialKey: z.string().min(1).parse(credentialKey),
  };
}

/** The authorization URL a public config carries (for views), if any. */
export function authorizationUrlOf(config: Record<string, unknown>): string | undefined {
  const exchanged = config.exchangedAuthCredential as { oauth2?: { authUri?: unknown } } | undefined;
  return typeof exchanged?.oauth2?.authUri === 'string' ? exchanged.oauth2.authUri : undefined;
}

/**
 * The credential in a user's answer to an `adk_request_credential` call (ADK's shape: the auth config back, with
 * `exchangedAuthCredential` filled in), checked against the scheme asked for.
 */
export function credentialFromAnswer(
  auth: ToolAuth,
  response: Record<string, unknown>,
  callId: string,
): AuthCredential {
  const parsed = authCredentialSchema.safeParse(response.exchangedAuthCredential);
  if (!parsed.success) {
    throw new AgentloomError('VALIDATION', `an auth answer needs ${zodIssues(parsed.error)}`, {
      details: { field: 'response.exchangedAuthCredential', callId },
    });
  }
  const credential = parsed.data;
  const scheme = auth.authScheme;
  if (scheme.type === 'oauth2') {
    if (credential.authType === 'oauth2') return credential;
    throw new AgentloomError(
      'VALIDATION',
      'this call asks for an OAuth2 authorization: answer with {"authResponseUri": "<the full callback URL>"} (or {"exchangedAuthCredential": {"authType": "oauth2", "oauth2": {"accessToken": "…"}}})',
      { details: { field: 'response.authResponseUri', callId } },
    );
  }
  const expected =
    scheme.type === 'apiKey'
      ? '{"authType": "apiKey", "apiKey": "…"}'
      : scheme.scheme === 'bearer'
        ? '{"authType": "http", "http": {"scheme": "bearer", "credentials": {"token": "…"}}}'
        : '{"authType": "http", "http": {"scheme": "basic", "credentials": {"username": "…", "password": "…"}}}';
  const fits =
    scheme.type === 'apiKey'
      ? credential.authType === 'apiKey'
      : credential.authType === 'http' &&
        credential.http.scheme === scheme.scheme &&
        (scheme.scheme === 'bearer'
          ? credential.http.credentials.token !== undefined
          : credential.http.credentials.username !== undefined &&
            credential.http.credentials.password !== undefined);
  if (!fits) {
    throw new AgentloomError(
      'VALIDATION',
      `this call asks for ${scheme.type === 'apiKey' ? 'an API key' : `HTTP ${scheme.scheme}`}: write exchangedAuthCredential as ${expected}`,
      { details: { field: 'response.exchangedAuthCredential', callId } },
    );
  }
  return credential;
}

/** What is stored (event, request row) in place of an answer that carried a credential. */
export function storedAnswer(auth: ToolAuth, credential: AuthCredential): Record<string, unknown> {
  return { credentialKey: credentialKeyOf(auth), authType: credential.authType, stored: true };
}
