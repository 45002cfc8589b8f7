/** Operations: liveness, readiness (database and queue answer), Prometheus metrics, the OpenAPI document. */
import { principalOf } from '../http/access.js';
import { errorResponses, type ApiApp, type RouteContext } from '../http/context.js';
import { HttpError, routeNotFound } from '../http/errors.js';
import { pingDatabase } from '../../store/repos/queries.js';
import { healthSchema, readySchema } from '../http/schemas.js';

/**
 * Routes that answer without a key: load balancers and orchestrators probe the first two; a user's browser comes
 * back from an OAuth2 provider to the callback (its single-use state is the capability).
 */
export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/v1/auth/callback']);

/** Resolves 'ok', or a short reason (the error itself is logged, not shown to unauthenticated callers). */
async function check(
  what: string,
  probe: () => Promise<void>,
  timeoutMs: number,
  log: (err: unknown) => void,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`${what} did not answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([
      probe().then(
        () => 'ok',
        (err: unknown) => {
          log(err);
          return `${what} did not answer`;
        },
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Registers the operations routes. */
export function opsRoutes(app: ApiApp, ctx: RouteContext): void {
  const { engine } = ctx;

  app.get('/healthz', {
    schema: {
      tags: ['operations'],
      summary: 'Liveness (no key needed)',
      security: [],
      response: { 200: healthSchema },
    },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/readyz', {
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the database and the queue answer (no key needed)',
      security: [],
      response: { 200: readySchema, ...errorResponses(503) },
    },
    handler: async (request) => {
      const log = (what: string) => (err: unknown) => request.log.warn({ err }, `${what} not ready`);
      const [database, queue] = await Promise.all([
        check('the database', () => pingDatabase(engine.store.db), ctx.readyTimeoutMs, log('database')),
        check('the queue', () => engine.pingQueue(), ctx.readyTimeoutMs, log('queue')),
      ]);
      if (database !== 'ok' || queue !== 'ok') {
        const reasons = [database, queue].filter((c) => c !== 'ok').join('; ');
        throw new HttpError(503, 'UNAVAILABLE', `not ready: ${reasons}`, { checks: { database, queue } });
      }
      return { status: 'ready' as const, checks: { database, queue } };
    },
  });

  app.get('/metrics', {
    schema: {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format); needs a key that sees every app',
      produces: ['text/plain'],
    },
    handler: async (request, reply) => {
      // A key limited to some apps would learn the others' names from the labels: to it, there is no such route.
      if (principalOf(request)?.apps !== undefined) throw routeNotFound(request.method, request.url);
      const text = await ctx.metrics.registry.metrics();
      return reply.type(ctx.metrics.registry.contentType).send(text);
    },
  });

  app.get('/openapi.json', {
    schema: { hide: true },
    handler: async () => app.swagger(),
  });
}
