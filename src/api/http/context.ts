/** What the route modules of the API share: the Fastify instance type and the server's context. */
import type {
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Engine } from '../../engine/engine.js';
import type { ApiMetrics } from './metrics.js';
import { errorSchema } from './schemas.js';

/** The API's Fastify instance: requests and responses typed by their zod schemas. */
export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  Logger,
  ZodTypeProvider
>;

/** What every route handler may use. */
export interface RouteContext {
  engine: Engine;
  metrics: ApiMetrics;
  /** Interval of SSE heartbeat comments, ms. */
  heartbeatMs: number;
  /** The SSE `retry:` a browser waits before reconnecting, ms. */
  retryMs: number;
  /** How long `/readyz` waits for the database and the queue, ms. */
  readyTimeoutMs: number;
  /** Whether requests need a key (false: the server runs without keys, on loopback). */
  authEnabled: boolean;
  /** Aborted when the server closes: open event streams end. */
  closing: AbortController;
  /** A URL template with `{traceId}` where a run's trace is shown (AGENTLOOM_TRACE_URL), if any. */
  traceUrl: string | undefined;
}

/** Error responses of a route, for its schema (and the OpenAPI document). */
export function errorResponses(...statuses: number[]): Record<number, typeof errorSchema> {
  return Object.fromEntries(statuses.map((status) => [status, errorSchema]));
}
