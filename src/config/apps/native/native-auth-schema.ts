/**
 * The zod schema of a tool's `auth:` in agentloom's YAML format: the code option's shape (tools/auth.ts, ADK's
 * AuthConfig) with every object strict, so a misspelt key is reported with the key it likely meant. The secret
 * fields hold their variables' values when this runs (native-secrets.ts reads them first); the rules across fields
 * are tools/auth.ts's own, applied after.
 */
import * as z from 'zod';

const httpUrl = (key: string) =>
  z.url({
    protocol: /^https?$/,
    error: `write ${key} as an http(s) URL, e.g. ${key}: https://example.com/${key}`,
  });
const scopes = z
  .record(z.string(), z.string({ error: "write each scope's description as text" }), {
    error:
      'write scopes as a mapping of scope to description, e.g. scopes: { calendar.read: Read your calendar }',
  })
  .default({});
const optionalText = (key: string) => z.string({ error: `write ${key} as text` }).optional();
const requiredText = (key: string, example: string) =>
  z
    .string({ error: `write ${key} as text, e.g. ${key}: ${example}` })
    .min(1, `write ${key}, e.g. ${key}: ${example}`);

/** A tool's `auth:` in YAML (see the file's comment). */
export const yamlAuthSchema = z.strictObject({
  authScheme: z.discriminatedUnion(
    'type',
    [
      z.strictObject({
        type: z.literal('apiKey'),
        in: z.enum(['header', 'query', 'cookie'], { error: 'write in: header, in: query or in: cookie' }),
        name: requiredText('name', 'X-API-Key'),
        description: optionalText('description'),
      }),
      z.strictObject({
        type: z.literal('http'),
        scheme: z.enum(['bearer', 'basic'], { error: 'write scheme: bearer or scheme: basic' }),
        bearerFormat: optionalText('bearerFormat'),
        description: optionalText('description'),
      }),
      z.strictObject({
        type: z.literal('oauth2'),
        flows: z.strictObject(
          {
            authorizationCode: z
              .strictObject({
                authorizationUrl: httpUrl('authorizationUrl'),
                tokenUrl: httpUrl('tokenUrl'),
                refreshUrl: httpUrl('refreshUrl').optional(),
                scopes,
              })
              .optional(),
            clientCredentials: z
              .strictObject({
                tokenUrl: httpUrl('tokenUrl'),
                refreshUrl: httpUrl('refreshUrl').optional(),
                scopes,
              })
              .optional(),
          },
          {
            error:
              'write flows: { authorizationCode: { authorizationUrl, tokenUrl, scopes } } or flows: { clientCredentials: { tokenUrl, scopes } }',
          },
        ),
        description: optionalText('description'),
      }),
    ],
    {
      error:
        'write authScheme: { type: apiKey, in: header, name: X-API-Key }, { type: http, scheme: bearer } or { type: oauth2, flows: { authorizationCode: { authorizationUrl, tokenUrl, scopes } } }',
    },
  ),
  rawAuthCredential: z
    .discriminatedUnion(
      'authType',
      [
        z.strictObject({ authType: z.literal('apiKey'), apiKey: z.string() }),
        z.strictObject({
          authType: z.literal('http'),
          http: z.strictObject({
            scheme: z.enum(['bearer', 'basic'], { error: 'write scheme: bearer or scheme: basic' }),
            credentials: z.strictObject({
              token: z.string().optional(),
              username: z.string().optional(),
              password: z.string().optional(),
            }),
          }),
        }),
        z.strictObject({
          authType: z.literal('oauth2'),
          oauth2: z.strictObject({
            clientId: requiredText('clientId', 'calendar-app'),
            clientSecret: z.string().optional(),
            redirectUri: httpUrl('redirectUri').optional(),
          }),
        }),
      ],
      {
        error:
          'write rawAuthCredential: { authType: oauth2, oauth2: { clientId, clientSecret } }, { authType: apiKey, apiKey: … } or { authType: http, http: { scheme, credentials } }',
      },
    )
    .optional(),
  credentialKey: z
    .string({ error: 'write credentialKey as text, e.g. credentialKey: calendar' })
    .regex(
      /^[A-Za-z0-9_.:-]{1,128}$/,
      'write a credentialKey of letters, digits and _ . : - (at most 128), e.g. calendar',
    )
    .optional(),
});
