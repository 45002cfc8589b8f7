/** Apps (agent trees with their definition hashes) and sessions (state and events). */
import { hasErrorCode } from '../../core/errors.js';
import { appNotFound, principalOf, sessionNotFound, visibleApps } from '../http/access.js';
import { canSee } from '../http/auth.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import { agentNodeJson } from '../http/json-views.js';
import { appListSchema, appParamsSchema, appSchema, idParamsSchema, sessionSchema } from '../http/schemas.js';

/** Registers the app and session routes. */
export function appRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;
  const appJson = (name: string) => {
    const registered = engine.apps.get(name);
    if (!registered) throw new Error(`app ${name} vanished from the registry`);
    return { name, definitionHash: registered.definitionHash, root: agentNodeJson(registered.root) };
  };

  app.get('/v1/apps', {
    schema: {
      tags: ['apps'],
      summary: 'The apps this server serves (those the key sees): agent trees and definition hashes',
      response: { 200: appListSchema, ...errorResponses(401) },
    },
    handler: async (request) => ({ apps: visibleApps(engine, request).map(appJson) }),
  });

  app.get('/v1/apps/:app', {
    schema: {
      tags: ['apps'],
      summary: "One app's agent tree and definition hash",
      params: appParamsSchema,
      response: { 200: appSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const name = request.params.app;
      if (!engine.apps.has(name) || !canSee(principalOf(request), name)) {
        throw appNotFound(engine, request, name);
      }
      return appJson(name);
    },
  });

  app.get('/v1/sessions/:id', {
    schema: {
      tags: ['sessions'],
      summary: 'A session with its state and events',
      params: idParamsSchema,
      response: { 200: sessionSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const { id } = request.params;
      try {
        const session = await engine.getSession(id);
        if (!canSee(principalOf(request), session.app)) throw sessionNotFound(id);
        return session;
      } catch (err) {
        if (hasErrorCode(err, 'NOT_FOUND')) throw sessionNotFound(id);
        throw err;
      }
    },
  });
}
