/**
 * Every app an A2A server: JSON-RPC at `POST /a2a/:app` and kagent's `POST /api/a2a/:namespace/:app`,
 * the agent card under each at `/.well-known/agent-card.json`. The SDK's JSON-RPC transport handlers do the protocol
 * (v1.0, and v0.3 for requests without `A2A-Version` or with 0.3, as the SDK's express adapter routes them); this
 * file is that adapter for Fastify: parse errors, version checks, JSON answers and SSE streams.
 */
import { traceparentOf } from '../http/trace-header.js';
import type { ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { A2A_VERSION_HEADER, Extensions, HTTP_EXTENSION_HEADER } from '@a2a-js/sdk';
import { A2A_LEGACY_PROTOCOL_VERSION, LEGACY_METHOD_TASKS_RESUBSCRIBE } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { ContentTypeNotSupportedError } from '@a2a-js/sdk/errors';
import {
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  validateVersion,
  type User,
} from '@a2a-js/sdk/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { packageRoot } from '../../core/package-root.js';
import type { RegisteredApp } from '../../engine/apps/registry.js';
import { actorOf, appNotFound, principalOf } from '../http/access.js';
import { canSee } from '../http/auth.js';
import type { ApiApp, RouteContext } from '../http/context.js';
import { agentCardJson, agentCardOf, legacyAgentCardJson, wantsV1Card } from './a2a-card.js';
import { EngineA2aHandler } from './a2a-handler.js';

const TAG = ['a2a'];
/** The namespace of an app that did not come from kagent manifests. */
const DEFAULT_NAMESPACE = 'default';
const CARD = '/.well-known/agent-card.json';
/** Where clients of A2A before 0.3 look for the card: the same card (v0.3's shape unless they ask for 1.x). */
const OLD_CARD = '/.well-known/agent.json';

/** The card routes: public (a client reads there how to authenticate), like the probes. */
export const A2A_PUBLIC_ROUTES: ReadonlySet<string> = new Set([
  `/a2a/:app${CARD}`,
  `/api/a2a/:namespace/:app${CARD}`,
  `/a2a/:app${OLD_CARD}`,
  `/api/a2a/:namespace/:app${OLD_CARD}`,
]);

const appParams = z.object({ app: z.string().min(1) });
/** For the OpenAPI document only: the body is read as text and checked by the SDK (its errors are JSON-RPC's). */
const rpcBody = z
  .unknown()
  .describe(
    'A JSON-RPC 2.0 request: A2A v1.0 methods (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, ' +
      'SubscribeToTask) with A2A-Version: 1.0, or v0.3 methods (message/send, message/stream, tasks/get, tasks/cancel, ' +
      'tasks/resubscribe) without it. Answers a JSON-RPC response, or for streaming methods text/event-stream.',
  );
const kagentParams = z.object({ namespace: z.string().min(1), app: z.string().min(1) });

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** The caller as the SDK sees it. */
class KeyUser implements User {
  constructor(private readonly name: string | undefined) {}
  get isAuthenticated(): boolean {
    return this.name !== undefined;
  }
  get userName(): string {
    return this.name ?? '';
  }
}

interface JsonRpcError {
  code: number;
  message: string;
  data?: unknown;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Writes one SSE block, waiting for a slow reader. */
async function writeBlock(response: ServerResponse, block: string): Promise<void> {
  if (response.writableEnded || response.destroyed) return;
  if (!response.write(block)) {
    await new Promise<void>((resolve) => {
      response.once('drain', resolve);
      response.once('close', resolve);
    });
  }
}

function isStream(value: unknown): value is AsyncGenerator<unknown, void, undefined> {
  return typeof (value as AsyncIterable<unknown> | undefined)?.[Symbol.asyncIterator] === 'function';
}

/** Registers the A2A routes (call inside a scope: it replaces the JSON parser to answer parse errors itself). */
export function a2aRoutes(server: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;
  const version = packageVersion();
  // The raw text of any type: a body that is not JSON answers JSON-RPC's parse error (-32700), and one of another
  // type -32005, as the SDK's adapter answers them (not the API's 400 and 415).
  server.removeAllContentTypeParsers();
  server.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    done(null, String(body));
  });

  /** The app a path names, if the caller may use it and the namespace is the app's; else the uniform 404. */
  const appOf = (request: FastifyRequest, name: string, namespace?: string): RegisteredApp => {
    const app = engine.apps.get(name);
    const expected = app?.namespace ?? DEFAULT_NAMESPACE;
    if (!app || !canSee(principalOf(request), name) || (namespace !== undefined && namespace !== expected)) {
      throw appNotFound(engine, request, name);
    }
    return app;
  };

  const endpointOf = (request: FastifyRequest, app: RegisteredApp, namespace?: string): string => {
    const path = namespace === undefined ? `/a2a/${app.name}` : `/api/a2a/${namespace}/${app.name}`;
    return `${request.protocol}://${request.host}${path}`;
  };

  const card = (request: FastifyRequest, app: RegisteredApp, namespace?: string) =>
    agentCardOf({ app, url: endpointOf(request, app, namespace), version, authEnabled: ctx.authEnabled });

  const sendCard = (request: FastifyRequest, reply: FastifyReply, app: RegisteredApp, namespace?: string) => {
    const built = card(request, app, namespace);
    reply.header('vary', A2A_VERSION_HEADER).header('cache-control', 'no-cache');
    return wantsV1Card(header(request, A2A_VERSION_HEADER))
      ? agentCardJson(built)
      : legacyAgentCardJson(built);
  };

  const rpc = async (
    request: FastifyRequest,
    reply: FastifyReply,
    app: RegisteredApp,
    namespace?: string,
  ) => {
    const requestedVersion = header(request, A2A_VERSION_HEADER);
    const legacy = (requestedVersion || A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
    const mapError = (err: unknown): JsonRpcError =>
      legacy
        ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err)
        : JsonRpcTransportHandler.mapToJSONRPCError(err);
    const type = header(request, 'content-type');
    if (type !== undefined && type.split(';', 1)[0]?.trim().toLowerCase() !== 'application/json') {
      const refused = new ContentTypeNotSupportedError(`content-type ${type}: send application/json`);
      return reply.send({ jsonrpc: '2.0', id: null, error: mapError(refused) });
    }
    let body: unknown;
    try {
      body = JSON.parse(typeof request.body === 'string' ? request.body : '');
    } catch {
      return reply.send({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: 'Invalid JSON payload.' },
      });
    }
    const id = (body as { id?: unknown } | null)?.id ?? null;
    const method = (body as { method?: unknown } | null)?.method;
    const gone = new AbortController();
    const onClosing = (): void => gone.abort();
    ctx.closing.signal.addEventListener('abort', onClosing, { once: true });
    reply.raw.once('close', () => {
      gone.abort();
      ctx.closing.signal.removeEventListener('abort', onClosing);
    });
    const built = card(request, app, namespace);
    const handler = new EngineA2aHandler({
      engine,
      app: app.name,
      card: built,
      actor: actorOf(request),
      ...traceparentOf(request),
      signal: gone.signal,
    });
    let result: unknown;
    try {
      const context = defaultServerCallContextBuilder({
        extensions: Extensions.parseServiceParameter(header(request, HTTP_EXTENSION_HEADER)),
        user: new KeyUser(principalOf(request)?.name),
        headers: request.headers,
        ...(requestedVersion ? { requestedVersion } : {}),
      });
      validateVersion(context.requestedVersion, built, 'JSONRPC');
      const transport = legacy
        ? new LegacyJsonRpcTransportHandler(handler)
        : new JsonRpcTransportHandler(handler);
      result = await transport.handle(body as Record<string, unknown>, context);
    } catch (err) {
      request.log.warn({ err }, 'a2a request failed');
      return reply.send({ jsonrpc: '2.0', id, error: mapError(err) });
    }
    if (!isStream(result)) return reply.send(result);
    // A stream: its first item (or its first error, answered as JSON) before the SSE headers, as the SDK's adapter does.
    const alwaysSse = legacy && method === LEGACY_METHOD_TASKS_RESUBSCRIBE;
    let first: IteratorResult<unknown, void> | undefined;
    if (!alwaysSse) {
      try {
        first = await result.next();
      } catch (err) {
        return reply.send({ jsonrpc: '2.0', id, error: mapError(err) });
      }
    }
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, SSE_HEADERS);
    // A comment now and then keeps proxies from closing a stream while a long step runs (clients skip comments).
    const heartbeat = setInterval(() => {
      if (!response.writableEnded) response.write(': heartbeat\n\n');
    }, ctx.heartbeatMs);
    heartbeat.unref();
    try {
      if (first && !first.done) await writeBlock(response, `data: ${JSON.stringify(first.value)}\n\n`);
      if (!first?.done) {
        for await (const item of result) {
          await writeBlock(response, `data: ${JSON.stringify(item)}\n\n`);
          if (gone.signal.aborted) break;
        }
      }
    } catch (err) {
      request.log.warn({ err, app: app.name }, 'a2a stream failed');
      await writeBlock(
        response,
        `event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: mapError(err) })}\n\n`,
      );
    } finally {
      clearInterval(heartbeat);
      if (!response.writableEnded) response.end();
    }
    return reply;
  };

  for (const path of [CARD, OLD_CARD]) {
    const summary =
      path === CARD ? "An app's A2A agent card" : "An app's A2A agent card (the path before A2A 0.3)";
    server.get(
      `/a2a/:app${path}`,
      { schema: { tags: TAG, summary, params: appParams, security: [] } },
      async (request, reply) => sendCard(request, reply, appOf(request, request.params.app)),
    );
    server.get(
      `/api/a2a/:namespace/:app${path}`,
      { schema: { tags: TAG, summary: `${summary}, at kagent's path`, params: kagentParams, security: [] } },
      async (request, reply) => {
        const { namespace, app } = request.params;
        return sendCard(request, reply, appOf(request, app, namespace), namespace);
      },
    );
  }
  server.post(
    '/a2a/:app',
    {
      schema: {
        tags: TAG,
        summary: 'A2A JSON-RPC (v1.0; v0.3 without A2A-Version)',
        params: appParams,
        body: rpcBody,
      },
    },
    async (request, reply) => rpc(request, reply, appOf(request, request.params.app)),
  );
  server.post(
    '/api/a2a/:namespace/:app',
    { schema: { tags: TAG, summary: "A2A JSON-RPC at kagent's path", params: kagentParams, body: rpcBody } },
    async (request, reply) => {
      const { namespace, app } = request.params;
      return rpc(request, reply, appOf(request, app, namespace), namespace);
    },
  );
}
