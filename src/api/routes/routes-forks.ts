/** Fork, replay and diff routes: fork a run at a node, list an invocation's forks. */
import { actorOf, visibleInvocation } from '../http/access.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import {
  forkBodySchema,
  forkListSchema,
  forkResultSchema,
  diffQuerySchema,
  diffSchema,
  replayBodySchema,
  replayResultSchema,
} from '../http/fork-schemas.js';
import { idParamsSchema } from '../http/schemas.js';

const TAG = ['forks'];

/** Registers the fork routes. */
export function forkRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.post('/v1/invocations/:id/fork', {
    schema: {
      tags: TAG,
      summary: 'Fork a run at a node: its history up to there copied, run live from there with the changes',
      params: idParamsSchema,
      body: forkBodySchema,
      response: { 201: forkResultSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request, reply) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      const result = await engine.fork(view.id, { ...request.body, createdBy: actorOf(request) });
      return reply.code(201).send(result);
    },
  });

  app.get('/v1/invocations/:id/forks', {
    schema: {
      tags: TAG,
      summary: "An invocation's forks, oldest first",
      params: idParamsSchema,
      response: { 200: forkListSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      const forks = await engine.forks(view.id);
      return {
        forks: forks.map((f) => ({
          id: f.id,
          status: f.status,
          at: typeof f.at === 'string' ? f.at : null,
          createdAt: f.createdAt.toISOString(),
        })),
      };
    },
  });

  app.post('/v1/invocations/:id/replay', {
    schema: {
      tags: TAG,
      summary:
        'Replay a recorded run on the current code with its recorded model and tool answers; the first divergence',
      params: idParamsSchema,
      body: replayBodySchema,
      response: { 200: replayResultSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      const definition = request.body?.definition;
      return engine.replay(view.id, definition ? { definition } : {});
    },
  });

  app.get('/v1/diff', {
    schema: {
      tags: TAG,
      summary:
        'Two runs compared node by node (status, output, tool calls, model calls, time), aligned by path',
      querystring: diffQuerySchema,
      response: { 200: diffSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const [a, b] = await Promise.all([
        visibleInvocation(engine, request, request.query.a),
        visibleInvocation(engine, request, request.query.b),
      ]);
      return engine.diff(a.id, b.id);
    },
  });
}
