/**
 * The HTTP API (CONTRACT.md "HTTP API"): Fastify with the engine's pino logger, zod schemas for every request and
 * response (and the OpenAPI document generated from them), API keys, and one error shape for every failure.
 */
import { loadEnv } from '../config/env.js';
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import fastifySwagger from '@fastify/swagger';
import { fastify, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { AgentloomError } from '../core/errors.js';
import { packageRoot } from '../core/package-root.js';
import type { Engine } from '../engine/engine.js';
import { authenticate, parseApiKeys, type ApiKey } from './http/auth.js';
import type { ApiApp, RouteContext } from './http/context.js';
import {
  codeOfStatus,
  errorBodyOf,
  httpFailure,
  HttpError,
  routeNotFound,
  type ErrorShape,
} from './http/errors.js';
import type { Registry } from 'prom-client';
import { ApiMetrics } from './http/metrics.js';
import { appRoutes } from './routes/routes-apps.js';
import { credentialRoutes } from './routes/routes-credentials.js';
import { authRoutes } from './routes/routes-auth.js';
import { eventRoutes } from './routes/routes-events.js';
import { invocationRoutes } from './routes/routes-invocations.js';
import { forkRoutes } from './routes/routes-forks.js';
import { opsRoutes, PUBLIC_ROUTES } from './routes/routes-ops.js';
import { requestRoutes } from './routes/routes-requests.js';
import { consoleRoutes, isConsoleRoute } from './routes/routes-console.js';
import { devUiRoutes } from './adk/adk-dev-ui.js';
import { adkRoutes } from './adk/adk-routes.js';
import { a2aRoutes, A2A_PUBLIC_ROUTES } from './a2a/a2a-routes.js';
import { dropUnreadBody, UNREAD_BODY_BOUNDS, type UnreadBodyBounds } from './http/unread-body.js';

/** Options of {@link createApiServer}. */
export interface ApiServerOptions {
  engine: Engine;
  /**
   * `AGENTLOOM_API_KEYS` (`name:key[:app1,app2]` entries separated by `;` or whitespace) or parsed keys. None (or
   * an empty list): requests need no key, and the caller must listen on loopback only (see `listenApi`).
   */
  apiKeys?: string | readonly ApiKey[];
  /** Interval of SSE heartbeat comments. Default 15 000 ms. */
  heartbeatMs?: number;
  /** The SSE `retry:` field: how long a browser waits before reconnecting. Default 2 000 ms. */
  retryMs?: number;
  /** How long `/readyz` waits for the database and the queue. Default 2 000 ms. */
  readyTimeoutMs?: number;
  /** Largest accepted request body; larger ones answer 413. Default 1 MiB. */
  bodyLimitBytes?: number;
  /**
   * How much of a body refused unread (413, 415, 401) is read and dropped after the answer, so that the client
   * reads the answer instead of a broken connection. Default 64 MiB or 10 s, whichever comes first.
   */
  unreadBodyBounds?: Partial<UnreadBodyBounds>;
  /** Default: the engine's logger. */
  logger?: Logger;
  /** Include Node.js process metrics in `/metrics`. Default true. */
  processMetrics?: boolean;
  /**
   * More metrics served at `/metrics` with the API's own: e.g. the step metrics of a worker in the same process
   * (`agentloom dev`). Their names must not repeat the API's (so no second set of process metrics).
   */
  metricsRegistries?: readonly Registry[];
  /**
   * The browser build of ADK's dev UI (see adk-dev-ui.ts `findAdkDevUi`), served at `/dev-ui/`. Only without
   * keys: the UI sends no Authorization header.
   */
  adkDevUiDir?: string;
  /**
   * Where a run's trace is shown: a URL template with `{traceId}` (the invocation answer's `traceUrl`, the console's
   * link). Default AGENTLOOM_TRACE_URL; none when unset.
   */
  traceUrl?: string;
}

/** Answers a malformed HTTP request (one Fastify never sees) in the API's error shape, then closes. */
function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status =
    err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431
      ? 'request headers are too large'
      : status === 408
        ? 'request timed out'
        : 'malformed HTTP request';
  const body = JSON.stringify({ error: { code: codeOfStatus(status), message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/**
 * Sends a failure in the error shape of its route family (401s say how to authenticate). A body left unread (too
 * large, refused before parsing) is read and dropped within `bounds`, on a connection kept open meanwhile.
 */
function sendFailure(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  { bounds = UNREAD_BODY_BOUNDS, shape = 'v1' }: { bounds?: UnreadBodyBounds; shape?: ErrorShape } = {},
): FastifyReply {
  // Fastify's `connection: close` (a body too large) would close under the reader; without it Node keeps the
  // client's wish, and a last answer is closed once the body is read (unread-body.ts).
  if (dropUnreadBody(request.raw, reply.raw, bounds)) reply.removeHeader('connection');
  const failure = httpFailure(err, String(request.id));
  if (failure.log === 'error') request.log.error({ err }, 'request failed');
  else if (failure.log === 'warn') request.log.warn({ err }, 'request failed: a service did not answer');
  if (failure.statusCode === 401) reply.header('www-authenticate', 'Bearer realm="agentloom"');
  return reply
    .code(failure.statusCode)
    .type('application/json; charset=utf-8')
    .send(errorBodyOf(failure.body, shape));
}

/** Auth on every route but the probes, request metrics, one error shape, and empty JSON bodies as no body. */
function installHooks(
  server: ApiApp,
  ctx: RouteContext,
  keys: readonly ApiKey[],
  bounds: UnreadBodyBounds,
): void {
  // An empty JSON body is no body (POST …/cancel from clients that always send the header).
  const parseJson = server.getDefaultJsonParser('error', 'error');
  server.removeContentTypeParser('application/json');
  server.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = String(body);
    if (text.trim() === '') done(null, undefined);
    else parseJson(request, text, done);
  });
  server.decorateRequest('agentloomPrincipal', undefined);
  server.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url ?? '';
    if (
      !ctx.authEnabled ||
      PUBLIC_ROUTES.has(route) ||
      A2A_PUBLIC_ROUTES.has(route) ||
      isConsoleRoute(route)
    ) {
      return;
    }
    const principal = authenticate(keys, request.headers.authorization);
    if (!principal) {
      throw new HttpError(
        401,
        'UNAUTHORIZED',
        'send Authorization: Bearer <key> with a key of AGENTLOOM_API_KEYS',
        {
          field: 'authorization',
          location: 'headers',
        },
      );
    }
    request.agentloomPrincipal = principal;
  });
  server.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
    };
    ctx.metrics.observeRequest(labels, reply.elapsedTime / 1000);
  });
  // On close, open event streams end at once (clients resume elsewhere with Last-Event-ID); requests in flight finish.
  server.addHook('preClose', async () => ctx.closing.abort());
  server.setErrorHandler((err: FastifyError, request, reply) => sendFailure(err, request, reply, { bounds }));
  server.setNotFoundHandler((request) => {
    throw routeNotFound(request.method, request.url);
  });
}

/** The OpenAPI document (`/openapi.json`), generated from the routes' zod schemas. */
async function documentApi(server: ApiApp): Promise<void> {
  await server.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'agentloom',
        version: packageVersion(),
        description:
          'Durable workflow engine for ADK-style agents. Errors are {"error": {"code", "message", "details"?}}. ' +
          'A body over the limit (default 1 MiB) answers 413 PAYLOAD_TOO_LARGE; the rest is read and dropped (up to ' +
          '64 MiB or 10 s, then the connection is closed), so that a client that streams its body reads the answer. ' +
          'ADK\'s API-server routes (tag adk) answer errors as adk-python does: {"detail": "…"}.',
      },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } },
      security: [{ apiKey: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
}

/**
 * Creates the API server for an engine (usually one with `worker: false`). Returns the Fastify instance, not yet
 * listening: call `listen` (or `listenApi`), or `inject` in tests.
 */
export async function createApiServer(options: ApiServerOptions): Promise<ApiApp> {
  const { engine } = options;
  const keys =
    typeof options.apiKeys === 'string' ? parseApiKeys(options.apiKeys) : [...(options.apiKeys ?? [])];
  const logger = (options.logger ?? engine.logger).child({ component: 'api' });
  const server = fastify({
    loggerInstance: logger,
    bodyLimit: options.bodyLimitBytes ?? 1024 * 1024,
    exposeHeadRoutes: false,
    routerOptions: { maxParamLength: 300 },
    clientErrorHandler,
    // A client has this long to send its request (headers and body); event streams are responses, not bound by it.
    requestTimeout: 30_000,
    // Errors raised before routing (a malformed percent-encoding in the URL) answer in the same shape.
    frameworkErrors: (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      void sendFailure(err, request, reply);
    },
  }).withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  const ctx: RouteContext = {
    engine,
    metrics: new ApiMetrics({
      db: engine.store.db,
      apps: [...engine.apps.keys()],
      logger,
      processMetrics: options.processMetrics,
      ...(options.metricsRegistries ? { include: options.metricsRegistries } : {}),
    }),
    heartbeatMs: options.heartbeatMs ?? 15_000,
    retryMs: options.retryMs ?? 2_000,
    readyTimeoutMs: options.readyTimeoutMs ?? 2_000,
    authEnabled: keys.length > 0,
    closing: new AbortController(),
    traceUrl: options.traceUrl ?? loadEnv().AGENTLOOM_TRACE_URL,
  };
  const bounds: UnreadBodyBounds = { ...UNREAD_BODY_BOUNDS, ...options.unreadBodyBounds };
  installHooks(server, ctx, keys, bounds);
  await documentApi(server);
  opsRoutes(server, ctx);
  invocationRoutes(server, ctx);
  forkRoutes(server, ctx);
  requestRoutes(server, ctx);
  eventRoutes(server, ctx);
  appRoutes(server, ctx);
  credentialRoutes(server, ctx);
  authRoutes(server, ctx);
  // ADK's routes answer errors as adk-python's FastAPI server does ({detail}): their own scope, their own handler.
  await server.register(async (adk: ApiApp) => {
    adk.setErrorHandler((err: FastifyError, request, reply) =>
      sendFailure(err, request, reply, { bounds, shape: 'adk' }),
    );
    adkRoutes(adk, ctx);
  });
  // A2A's routes parse their own bodies (a body that is not JSON is JSON-RPC's parse error, -32700): their own scope.
  await server.register(async (a2a: ApiApp) => a2aRoutes(a2a, ctx));
  await consoleRoutes(server);
  if (options.adkDevUiDir !== undefined) {
    if (ctx.authEnabled) {
      throw new AgentloomError(
        'CONFIG',
        "ADK's dev UI sends no API key: serve it from a server without AGENTLOOM_API_KEYS (loopback only)",
      );
    }
    await devUiRoutes(server, options.adkDevUiDir);
  }
  return server;
}
