/**
 * Schemas of the credentials routes (routes-credentials.ts): which of a user's stored tool credentials to list or
 * delete, and what is shown of each — the app, the user, the key, the type and the dates, never the secret.
 */
import * as z from 'zod';
import { appNameSchema, idParamsSchema } from './schemas.js';

/** A short single-line string (ids, names, keys), as the other routes take them. */
const plainText = idParamsSchema.shape.id;

export const credentialsQuerySchema = z.strictObject({
  userId: z
    .string({ error: 'name the user whose credentials these are: ?userId=U' })
    .pipe(plainText)
    .describe('whose credentials'),
  app: appNameSchema.optional().describe('only those of this app (default: every app)'),
});

export const credentialsDeleteQuerySchema = credentialsQuerySchema.extend({
  credentialKey: plainText.optional().describe('only the one under this key (default: every key)'),
});

export const credentialSchema = z
  .object({
    app: z.string(),
    userId: z.string(),
    credentialKey: z.string().describe('what tools find it under (their auth.credentialKey)'),
    authType: z.string().describe('apiKey, http or oauth2'),
    expiresAt: z.string().nullable().describe('when it lapses (OAuth2 tokens), else null'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Credential' });
export type CredentialJson = z.infer<typeof credentialSchema>;

export const credentialListSchema = z.object({ credentials: z.array(credentialSchema) });

export const credentialsDeletedSchema = z.object({
  deleted: z.number().int().describe('how many credentials were deleted'),
});
