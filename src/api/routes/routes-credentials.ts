/**
 * Users' stored tool credentials, for operators (CONTRACT.md "HTTP API"): list a user's (app, key, type, dates —
 * never the secret) and delete them, so the next call of a tool that needs one pauses for it again. Only an admin
 * may: a key configured without an app list, or anyone on a server without keys (which listens on loopback only).
 * A key limited to some apps gets 403: credentials belong to users, not to apps a key was scoped to.
 */
import type { FastifyRequest } from 'fastify';
import {
  deleteCredentialsTx,
  listCredentials,
  type CredentialSummaryRow,
} from '../../store/repos/credentials.js';
import { principalOf } from '../http/access.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import {
  credentialListSchema,
  credentialsDeletedSchema,
  credentialsDeleteQuerySchema,
  credentialsQuerySchema,
  type CredentialJson,
} from '../http/credential-schemas.js';
import { HttpError } from '../http/errors.js';

const TAG = ['credentials'];

/** Refuses a key limited to some apps (403), saying which key may. */
function requireAdmin(request: FastifyRequest): void {
  const principal = principalOf(request);
  if (principal?.apps === undefined) return;
  throw new HttpError(
    403,
    'FORBIDDEN',
    `the key "${principal.name}" sees only some apps; users' credentials are managed with a key that sees every app (an AGENTLOOM_API_KEYS entry without an app list)`,
    { field: 'authorization', location: 'headers' },
  );
}

function credentialJson(row: CredentialSummaryRow): CredentialJson {
  return {
    app: row.app,
    userId: row.userId,
    credentialKey: row.credentialKey,
    authType: row.authType,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** Registers `GET /v1/credentials` and `DELETE /v1/credentials`. */
export function credentialRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.get('/v1/credentials', {
    schema: {
      tags: TAG,
      summary: "A user's stored tool credentials (keys, types and expiry, never secrets); admin keys only",
      querystring: credentialsQuerySchema,
      response: { 200: credentialListSchema, ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => {
      requireAdmin(request);
      const rows = await listCredentials(engine.store.db, request.query);
      return { credentials: rows.map(credentialJson) };
    },
  });

  app.delete('/v1/credentials', {
    schema: {
      tags: TAG,
      summary:
        "Delete a user's stored tool credentials (in one app, or the one under a key); their tools ask again. Admin keys only",
      querystring: credentialsDeleteQuerySchema,
      response: { 200: credentialsDeletedSchema, ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => {
      requireAdmin(request);
      const deleted = await deleteCredentialsTx(engine.store.db, request.query);
      request.log.info(
        { userId: request.query.userId, app: request.query.app, deleted },
        'credentials deleted',
      );
      return { deleted };
    },
  });
}
