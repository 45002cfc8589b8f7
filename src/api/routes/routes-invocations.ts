/** Invocation routes: enqueue, read, list, node tree, answers to paused calls, cancel, retry. */
import { traceparentOf } from '../http/trace-header.js';
import type { FastifyRequest } from 'fastify';
import { hasErrorCode } from '../../core/errors.js';
import type { FunctionResponseInput } from '../../engine/runs/resume.js';
import type { Budget } from '../../models/budget/budget.js';
import type { InvocationView, PendingCall } from '../../engine/runs/views.js';
import { actorOf, appNotFound, principalOf, visibleInvocation } from '../http/access.js';
import { canSee } from '../http/auth.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import { HttpError } from '../http/errors.js';
import {
  decodeCursor,
  encodeCursor,
  invocationJson,
  invocationSummaryJson,
  nodeJson,
} from '../http/json-views.js';
import { listInvocationsPage } from '../../store/repos/queries.js';
import {
  appParamsSchema,
  callParamsSchema,
  confirmationBodySchema,
  enqueueBodySchema,
  enqueueResultSchema,
  functionResponsesBodySchema,
  idParamsSchema,
  invocationPageSchema,
  invocationSchema,
  listQuerySchema,
  nodeListSchema,
  retryBodySchema,
} from '../http/schemas.js';

const TAG = ['invocations'];

/**
 * Checks answers before any is stored, so a request is applied whole or not at all: the engine stores each answer
 * in its own transaction, and a refusal of the second must not leave the first written. Calls that are not pending
 * (answered before, or unknown) go first: they are no-ops or refusals and write nothing. Returns that order.
 */
function orderAnswers(view: InvocationView, answers: FunctionResponseInput[]): FunctionResponseInput[] {
  const pending = new Map<string, PendingCall>(view.pending.map((p) => [p.callId, p]));
  const seen = new Set<string>();
  answers.forEach((answer, i) => {
    if (seen.has(answer.id)) {
      throw new HttpError(
        400,
        'VALIDATION',
        `functionResponses.${i}.id: call "${answer.id}" is answered twice`,
        {
          field: `functionResponses.${i}.id`,
        },
      );
    }
    seen.add(answer.id);
    const call = pending.get(answer.id);
    if (call?.kind === 'confirmation' && typeof answer.response.confirmed !== 'boolean') {
      throw new HttpError(
        400,
        'VALIDATION',
        `functionResponses.${i}.response.confirmed: a confirmation is answered with {"confirmed": true|false, "payload"?: …}`,
        { field: `functionResponses.${i}.response.confirmed`, callId: answer.id },
      );
    }
    if (call?.kind === 'in_doubt' && !['rerun', 'skip', 'fail'].includes(String(answer.response.action))) {
      throw new HttpError(
        400,
        'VALIDATION',
        `functionResponses.${i}.response.action: an in-doubt call is answered with {"action": "rerun"}, {"action": "skip", "result": {…}} or {"action": "fail", "message"?: "…"}`,
        { field: `functionResponses.${i}.response.action`, callId: answer.id },
      );
    }
  });
  return [...answers.filter((a) => !pending.has(a.id)), ...answers.filter((a) => pending.has(a.id))];
}

/** Stores answers, counting each request's outcome for `/metrics`. */
async function answer(
  ctx: RouteContext,
  request: FastifyRequest,
  view: InvocationView,
  answers: FunctionResponseInput[],
): Promise<InvocationView> {
  const ordered = orderAnswers(view, answers);
  const noop = ordered.every((a) => !view.pending.some((p) => p.callId === a.id));
  try {
    await ctx.engine.respond({ invocationId: view.id, functionResponses: ordered, by: actorOf(request) });
  } catch (err) {
    if (hasErrorCode(err, 'CONFLICT')) ctx.metrics.answers.inc({ outcome: 'conflict' });
    throw err;
  }
  ctx.metrics.answers.inc({ outcome: noop ? 'noop' : 'answered' });
  return ctx.engine.get(view.id);
}

/** Registers the invocation routes. */
export function invocationRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.post('/v1/apps/:app/invocations', {
    schema: {
      tags: TAG,
      summary: 'Enqueue an invocation of an app',
      params: appParamsSchema,
      body: enqueueBodySchema,
      response: { 202: enqueueResultSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request, reply) => {
      const { app } = request.params;
      if (!engine.apps.has(app) || !canSee(principalOf(request), app))
        throw appNotFound(engine, request, app);
      const result = await engine.enqueue({
        app,
        ...request.body,
        createdBy: actorOf(request),
        ...traceparentOf(request),
      });
      ctx.metrics.enqueued.inc({ app });
      return reply.code(202).send(result);
    },
  });

  app.get('/v1/invocations', {
    schema: {
      tags: TAG,
      summary: 'List invocations, newest first',
      querystring: listQuerySchema,
      response: { 200: invocationPageSchema, ...errorResponses(400, 401) },
    },
    handler: async (request) => {
      const { cursor, limit, ...filters } = request.query;
      const apps = principalOf(request)?.apps;
      const page = await listInvocationsPage(engine.store.db, {
        ...filters,
        ...(apps ? { apps: [...apps] } : {}),
        limit: limit ?? 50,
        ...(cursor === undefined ? {} : { cursor: decodeCursor(cursor) }),
      });
      return {
        invocations: page.rows.map(invocationSummaryJson),
        nextCursor: page.next ? encodeCursor(page.next) : null,
      };
    },
  });

  app.get('/v1/invocations/:id', {
    schema: {
      tags: TAG,
      summary: 'An invocation with its pending calls',
      params: idParamsSchema,
      response: { 200: invocationSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      invocationJson(await visibleInvocation(engine, request, request.params.id), ctx.traceUrl),
  });

  app.get('/v1/invocations/:id/nodes', {
    schema: {
      tags: TAG,
      summary: "An invocation's nodes (the checkpoint table): status, checkpoint, attempt",
      params: idParamsSchema,
      response: { 200: nodeListSchema, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      return { nodes: (await engine.nodes(view.id)).map(nodeJson) };
    },
  });

  app.post('/v1/invocations/:id/responses', {
    schema: {
      tags: TAG,
      summary: 'Answer paused calls (same answer again: no-op; a different one: 409)',
      params: idParamsSchema,
      body: functionResponsesBodySchema,
      response: { 200: invocationSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      return invocationJson(await answer(ctx, request, view, request.body.functionResponses), ctx.traceUrl);
    },
  });

  app.post('/v1/invocations/:id/confirmations/:callId', {
    schema: {
      tags: TAG,
      summary: 'Confirm or reject a call awaiting confirmation',
      params: callParamsSchema,
      body: confirmationBodySchema,
      response: { 200: invocationSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request) => {
      const { id, callId } = request.params;
      const view = await visibleInvocation(engine, request, id);
      const call = view.pending.find((p) => p.callId === callId);
      if (call && call.kind !== 'confirmation') {
        throw new HttpError(
          400,
          'VALIDATION',
          `call "${callId}" is a ${call.kind} call, not a confirmation: answer it with POST /v1/invocations/${id}/responses`,
          { field: 'callId' },
        );
      }
      const { confirmed, payload } = request.body;
      const response: Record<string, unknown> = { confirmed };
      if (payload !== undefined) response.payload = payload;
      return invocationJson(await answer(ctx, request, view, [{ id: callId, response }]), ctx.traceUrl);
    },
  });

  app.post('/v1/invocations/:id/cancel', {
    schema: {
      tags: TAG,
      summary: 'Cancel an invocation (an ended one is left as it is)',
      params: idParamsSchema,
      response: { 200: invocationSchema, ...errorResponses(400, 401, 404, 413, 415) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      return invocationJson(await engine.cancel(view.id), ctx.traceUrl);
    },
  });

  app.post('/v1/invocations/:id/retry', {
    schema: {
      tags: TAG,
      summary: 'Run a failed or cancelled invocation again from its checkpoints',
      params: idParamsSchema,
      body: retryBodySchema,
      response: { 200: invocationSchema, ...errorResponses(400, 401, 404, 409, 413, 415) },
    },
    handler: async (request) => {
      const view = await visibleInvocation(engine, request, request.params.id);
      const { maxLlmCalls, budget } = request.body ?? {};
      return invocationJson(
        await engine.retry(view.id, {
          ...(maxLlmCalls === undefined ? {} : { maxLlmCalls }),
          ...(budget === undefined ? {} : { budget: budget as Budget }),
        }),
        ctx.traceUrl,
      );
    },
  });
}
