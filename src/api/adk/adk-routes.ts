/**
 * ADK's API-server routes beside /v1, so ADK's dev UI and clients drive agentloom unchanged: apps,
 * sessions, `/run` and `/run_sse` (a new message enqueues an invocation; a function response to a paused call
 * answers it through the engine and the same invocation resumes where it stopped), and the dev UI's graph, trace
 * and version routes. The run routes stream until the invocation settles — completed, failed, cancelled or paused.
 *
 * A client that goes away (the dev UI's Stop button aborts its request) stops only its stream: the run is durable
 * and goes on; `POST /v1/invocations/:id/cancel` cancels it.
 */
import { traceparentOf } from '../http/trace-header.js';
import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import { functionResponsesOf, type Content, type FunctionResponse } from '../../core/content.js';
import { hasErrorCode } from '../../core/errors.js';
import { packageRoot } from '../../core/package-root.js';
import type { Engine } from '../../engine/engine.js';
import { findToolRequest } from '../../store/repos/tool-requests.js';
import { actorOf, appNotFound, principalOf, visibleApps } from '../http/access.js';
import { canSee } from '../http/auth.js';
import type { ApiApp, RouteContext } from '../http/context.js';
import { HttpError } from '../http/errors.js';
import { adkAgentInfo, adkEvent, adkSession, agentAtPath, agentGraphDot } from './adk-json.js';
import {
  adkAppParamsSchema,
  adkCreateSessionBodySchema,
  adkPatchSessionBodySchema,
  adkRunBodySchema,
  adkSessionIdParamsSchema,
  adkSessionParamsSchema,
  adkTraceParamsSchema,
  type AdkRunBody,
} from './adk-schemas.js';

const TAG = ['adk'];

function sessionNotFound(id: string): HttpError {
  return new HttpError(404, 'NOT_FOUND', `Session not found: ${id}`, { sessionId: id });
}

/** The app, if the caller may use it; else the uniform 404. */
function visibleApp(engine: Engine, request: FastifyRequest, app: string): void {
  if (!engine.apps.has(app) || !canSee(principalOf(request), app)) throw appNotFound(engine, request, app);
}

/** The session of (app, user), else 404 (another app's or user's session is not found either). */
async function sessionOf(engine: Engine, app: string, user: string, id: string) {
  const session = await engine.store.getSession(id);
  if (!session || session.app !== app || session.userId !== user) throw sessionNotFound(id);
  return session;
}

/** Where a run request's events start: the invocation to follow and the seq after which its events are new. */
interface RunStart {
  invocationId: string;
  afterSeq: number;
}

/**
 * Answers paused calls with the message's function responses (the dev UI's confirmation card sends one for
 * `adk_request_confirmation`), or enqueues the message as a new invocation of the session.
 */
async function startRun(engine: Engine, request: FastifyRequest, body: AdkRunBody): Promise<RunStart> {
  visibleApp(engine, request, body.appName);
  const session = await sessionOf(engine, body.appName, body.userId, body.sessionId);
  const responses = functionResponsesOf(body.newMessage as Content);
  if (responses.length === 0) {
    const { invocationId } = await engine.enqueue({
      app: body.appName,
      userId: body.userId,
      sessionId: session.id,
      input: body.newMessage as Content,
      ...(body.stateDelta ? { stateDelta: body.stateDelta } : {}),
      createdBy: actorOf(request),
      ...traceparentOf(request),
    });
    return { invocationId, afterSeq: session.lastSeq };
  }
  const invocationId = await answeredInvocation(
    engine,
    session.id,
    responses,
    body.invocationId ?? undefined,
  );
  await engine.respond({
    invocationId,
    functionResponses: responses.map((r) => ({ id: r.id as string, name: r.name, response: r.response })),
    by: actorOf(request),
  });
  return { invocationId, afterSeq: session.lastSeq };
}

/** The one invocation of this session whose paused calls the responses answer; 400 / 404 naming what is wrong. */
async function answeredInvocation(
  engine: Engine,
  sessionId: string,
  responses: FunctionResponse[],
  given: string | undefined,
): Promise<string> {
  const invocations = new Set<string>();
  for (const [i, response] of responses.entries()) {
    if (!response.id) {
      throw new HttpError(
        400,
        'VALIDATION',
        `newMessage.parts: functionResponse ${i} has no id: send the id of the function call it answers`,
        { field: 'newMessage.parts' },
      );
    }
    const request = await findToolRequest(engine.store.db, response.id, given);
    const owner = request ? await engine.get(request.invocationId) : undefined;
    if (!request || owner?.sessionId !== sessionId) {
      throw new HttpError(
        404,
        'NOT_FOUND',
        `no paused call has id "${response.id}" in session ${sessionId}`,
        {
          callId: response.id,
        },
      );
    }
    invocations.add(request.invocationId);
  }
  if (invocations.size > 1) {
    throw new HttpError(
      400,
      'VALIDATION',
      'newMessage answers calls of several invocations: answer one at a time',
      {
        field: 'newMessage.parts',
      },
    );
  }
  return [...invocations][0] as string;
}

/** Events of the run from `start` until it settles, without the user's own message. */
async function* runEvents(engine: Engine, start: RunStart, partial: boolean, signal: AbortSignal) {
  for await (const event of engine.events(start.invocationId, {
    afterSeq: start.afterSeq,
    follow: true,
    partial,
  })) {
    if (signal.aborted) return;
    if (event.author === 'user' && event.invocationId === start.invocationId) continue;
    yield adkEvent(event);
  }
}

/** Writes `data: …` blocks, waiting for a slow reader. */
async function writeData(response: ServerResponse, value: unknown): Promise<void> {
  if (response.writableEnded || response.destroyed) return;
  if (!response.write(`data: ${JSON.stringify(value)}\n\n`)) {
    await new Promise<void>((resolve) => {
      response.once('drain', resolve);
      response.once('close', resolve);
    });
  }
}

/** What a failed run step says in the stream: the message, as ADK's server writes it. */
function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/** Registers ADK's API-server routes. */
export function adkRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;
  const version = packageVersion();

  app.get(
    '/version',
    { schema: { tags: TAG, summary: 'The server version (ADK API server)' } },
    // adk-python's keys (a plain dict there, so snake_case): ADK's dev UI shows `language_version`.
    async () => ({
      version,
      language: 'typescript',
      language_version: process.version,
      engine: 'agentloom',
    }),
  );

  app.get('/list-apps', { schema: { tags: TAG, summary: 'App names (ADK API server)' } }, async (request) =>
    visibleApps(engine, request),
  );

  app.get(
    '/apps/:app/users/:user/sessions',
    {
      schema: {
        tags: TAG,
        summary: "A user's sessions of an app, newest first",
        params: adkSessionParamsSchema,
      },
    },
    async (request) => {
      const { app: appName, user } = request.params;
      visibleApp(engine, request, appName);
      const sessions = await engine.store.listSessions({ app: appName, userId: user });
      return sessions.map((s) => adkSession(s));
    },
  );

  const createSession = async (
    request: FastifyRequest,
    appName: string,
    user: string,
    body:
      | { state?: Record<string, unknown> | null; sessionId?: string | null; events?: unknown[] | null }
      | null
      | undefined,
    id: string | undefined,
  ) => {
    visibleApp(engine, request, appName);
    if (body?.events && body.events.length > 0) {
      throw new HttpError(
        400,
        'VALIDATION',
        'events: agentloom records a session\'s events as its runs write them; create the session without "events"',
        { field: 'events' },
      );
    }
    const sessionId = id ?? body?.sessionId ?? undefined;
    try {
      const session = await engine.store.createSession({
        app: appName,
        userId: user,
        ...(sessionId ? { id: sessionId } : {}),
        ...(body?.state ? { state: body.state } : {}),
      });
      return adkSession(session);
    } catch (err) {
      if (hasErrorCode(err, 'CONFLICT')) {
        throw new HttpError(400, 'VALIDATION', `Session already exists: ${sessionId}`, {
          field: 'sessionId',
        });
      }
      throw err;
    }
  };

  app.post(
    '/apps/:app/users/:user/sessions',
    {
      schema: {
        tags: TAG,
        summary: 'Create a session ({state?, sessionId?}; the body may be empty)',
        params: adkSessionParamsSchema,
        body: adkCreateSessionBodySchema,
      },
    },
    async (request) =>
      createSession(request, request.params.app, request.params.user, request.body, undefined),
  );

  app.post(
    '/apps/:app/users/:user/sessions/:id',
    {
      schema: {
        tags: TAG,
        summary: 'Create a session with this id ({state?})',
        params: adkSessionIdParamsSchema,
        body: adkCreateSessionBodySchema,
      },
    },
    async (request) =>
      createSession(request, request.params.app, request.params.user, request.body, request.params.id),
  );

  app.get(
    '/apps/:app/users/:user/sessions/:id',
    { schema: { tags: TAG, summary: 'A session with its events', params: adkSessionIdParamsSchema } },
    async (request) => {
      const { app: appName, user, id } = request.params;
      visibleApp(engine, request, appName);
      const session = await sessionOf(engine, appName, user, id);
      return adkSession(session, await engine.store.listEvents(id));
    },
  );

  app.patch(
    '/apps/:app/users/:user/sessions/:id',
    {
      schema: {
        tags: TAG,
        summary: "Change a session's state ({stateDelta}), recorded as an event",
        params: adkSessionIdParamsSchema,
        body: adkPatchSessionBodySchema,
      },
    },
    async (request) => {
      const { app: appName, user, id } = request.params;
      visibleApp(engine, request, appName);
      await sessionOf(engine, appName, user, id);
      await engine.store.appendEvent({
        sessionId: id,
        event: { author: 'user', actions: { stateDelta: request.body.stateDelta, artifactDelta: {} } },
      });
      const session = await sessionOf(engine, appName, user, id);
      return adkSession(session, await engine.store.listEvents(id));
    },
  );

  app.delete(
    '/apps/:app/users/:user/sessions/:id',
    {
      schema: {
        tags: TAG,
        summary: 'Delete a session and its runs (409 while one of its runs has not ended)',
        params: adkSessionIdParamsSchema,
      },
    },
    async (request, reply) => {
      const { app: appName, user, id } = request.params;
      visibleApp(engine, request, appName);
      await sessionOf(engine, appName, user, id);
      await engine.store.deleteSession(id);
      return reply.code(204).send();
    },
  );

  app.post(
    '/run',
    {
      schema: {
        tags: TAG,
        summary: 'Run (or answer) and return the events until the run settles',
        body: adkRunBodySchema,
      },
    },
    async (request) => {
      const start = await startRun(engine, request, request.body);
      const closed = new AbortController();
      request.raw.once('close', () => closed.abort());
      const events = [];
      for await (const event of runEvents(engine, start, false, closed.signal)) events.push(event);
      return events;
    },
  );

  app.post(
    '/run_sse',
    {
      schema: {
        tags: TAG,
        summary: 'Run (or answer) and stream the events as `data:` blocks until the run settles',
        body: adkRunBodySchema,
      },
    },
    async (request, reply) => {
      const start = await startRun(engine, request, request.body);
      const response = reply.raw;
      const gone = new AbortController();
      response.once('close', () => gone.abort());
      reply.hijack();
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      try {
        for await (const event of runEvents(engine, start, request.body.streaming === true, gone.signal)) {
          await writeData(response, event);
        }
      } catch (err) {
        request.log.warn({ err, invocationId: start.invocationId }, 'run_sse stream failed');
        await writeData(response, { error: errorText(err) });
      } finally {
        if (!response.writableEnded) response.end();
      }
    },
  );

  app.get(
    '/dev/apps/:app/build_graph',
    { schema: { tags: TAG, summary: "The app's agent tree (ADK dev UI)", params: adkAppParamsSchema } },
    async (request) => {
      const { app: appName } = request.params;
      visibleApp(engine, request, appName);
      const root = engine.apps.get(appName)?.root;
      if (!root) throw appNotFound(engine, request, appName);
      return { name: appName, root_agent: adkAgentInfo(root) };
    },
  );

  app.get(
    '/dev/apps/:app/build_graph_image',
    {
      schema: {
        tags: TAG,
        summary: "The app's agent tree as Graphviz text (ADK dev UI)",
        params: adkAppParamsSchema,
      },
    },
    async (request) => {
      const { app: appName } = request.params;
      visibleApp(engine, request, appName);
      const query = request.query as { dark_mode?: string; node?: string };
      const node = typeof query.node === 'string' ? query.node : '';
      const root = engine.apps.get(appName)?.root;
      const target = root ? agentAtPath(root, node) : undefined;
      if (!target) throw new HttpError(404, 'NOT_FOUND', `Node not found: ${node}`, { field: 'node' });
      const dotSrc = agentGraphDot(target, query.dark_mode === 'true');
      return { [node]: { dotSrc }, dotSrc };
    },
  );

  app.get(
    '/dev/apps/:app/debug/trace/session/:id',
    {
      schema: {
        tags: TAG,
        summary: 'Trace spans of a session (none are kept: [])',
        params: adkTraceParamsSchema,
      },
    },
    async (request) => {
      visibleApp(engine, request, request.params.app);
      return [];
    },
  );
}
