/**
 * What a tool declares it needs (ADK's `AuthConfig`, camelCase as ADK's wire form) and what a user answers with:
 * the schemes (an API key, HTTP bearer or basic), the credential key a stored credential is found under, the
 * public form of a config that may be shown in an event (no secret: no key, token, password or client secret),
 * and the checked answer.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AgentloomError } from '../core/errors.js';
import { zodIssues } from '../core/validation.js';

/** ADK's security schemes (OpenAPI's): an API key sent in a header, query or cookie; HTTP bearer or basic. */
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
  ],
  { error: 'authScheme.type is "apiKey" ({in, name}) or "http" ({scheme: "bearer" | "basic"})' },
);
export type AuthScheme = z.infer<typeof authSchemeSchema>;

/** A credential as a tool receives it (ADK's `AuthCredential`, the exchanged one). */
export const authCredentialSchema = z.discriminatedUnion(
  'authType',
  [
    z.object({ authType: z.literal('apiKey'), apiKey: z.string().min(1, 'write the API key') }),
    z.object({
      authType: z.literal('http'),
      http: z.object({
        scheme: z.enum(['bearer', 'basic']),
        credentials: z.object({
          token: z.string().min(1).optional(),
          username: z.string().min(1).optional(),
          password: z.string().min(1).optional(),
        }),
      }),
    }),
  ],
  {
    error:
      'exchangedAuthCredential is {"authType": "apiKey", "apiKey": "…"} or {"authType": "http", "http": {"scheme": "bearer", "credentials": {"token": "…"}}}',
  },
);
export type AuthCredential = z.infer<typeof authCredentialSchema>;

/** What a tool declares: `auth: { authScheme, credentialKey? }`. */
export const toolAuthSchema = z.strictObject({
  authScheme: authSchemeSchema,
  credentialKey: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'use letters, digits and _ . : - (at most 128), e.g. "weather_api"')
    .optional(),
});
export type ToolAuth = z.infer<typeof toolAuthSchema>;

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
  const digest = createHash('sha256')
    .update(JSON.stringify(stable(scheme)))
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

/** The config as an event or a pending call may show it: the scheme and the key, never a secret. */
export function publicAuthConfig(auth: ToolAuth): Record<string, unknown> {
  return { authScheme: auth.authScheme, credentialKey: credentialKeyOf(auth) };
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
