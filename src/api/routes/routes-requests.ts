/**
 * Paused calls seen from above the runs: the inbox of calls waiting for an answer across the invocations a caller
 * may see, and one invocation's audit trail (every request it made, who answered it and when).
 */
import { invocationToolRequests, listPendingCalls } from '../../store/repos/queries.js';
import { principalOf, visibleInvocation } from '../http/access.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import { inboxItemJson, toolRequestJson } from '../http/json-views.js';
import { idParamsSchema, inboxQuerySchema, inboxSchema, toolRequestListSchema } from '../http/schemas.js';

const TAG = ['invocations'];

/** Registers `GET /v1/pending` and `GET /v1/invocations/:id/requests`. */
export function requestRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.get('/v1/pending', {
    schema: {
      tags: TAG,
      summary:
        'Calls waiting for an answer across invocations (confirmations, long-running, in-doubt), oldest first',
      querystring: inboxQuerySchema,
      response: { 200: inboxSchema, ...errorResponses(400, 401) },
    },
    handler: async (request) => {
      const { app: appName, kind, limit = 200 } = request.query;
      const apps = principalOf(request)?.apps;
      const rows = await listPendingCalls(engine.store.db, {
        ...(appName === undefined ? {} : { app: appName }),
        ...(kind === undefined ? {} : { kind }),
        ...(apps ? { apps: [...apps] } : {}),
        limit,
      });
      return { calls: rows.slice(0, limit).map(inboxItemJson), more: rows.length > limit };
    },
  });

  app.get('/v1/invocations/:id/requests', {
    schema: {
      tags: TAG,
      summary: "An invocation's paused calls, answered or not: who answered each and when (the audit trail)",
      params: idParamsSchema,
      response: { 200: toolRequestListSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      return { requests: (await invocationToolRequests(engine.store.db, view.id)).map(toolRequestJson) };
    },
  });
}
