/**
 * An API process (`agentloom api`): an engine with `worker: false` on PostgreSQL and the shared queue (it enqueues
 * and reads, never runs steps), behind the HTTP API. Start as many as you like behind a load balancer. SIGTERM /
 * SIGINT close it: open event streams end (clients resume elsewhere with Last-Event-ID), then it exits 0.
 */
import type { Logger } from 'pino';
import { queueOption } from '../config/process-config.js';
import { createEngine } from '../engine/create-engine.js';
import type { Engine } from '../engine/engine.js';
import { handleShutdownSignals, processLogger } from '../engine/process-lifecycle.js';
import type { Registry } from 'prom-client';
import type { ApiConfig } from './api-config.js';
import type { ApiKey } from './auth.js';
import type { ApiApp } from './context.js';
import { createApiServer } from './server.js';

/** How long a shutdown may take before the process exits anyway. */
const FORCE_EXIT_MS = 10_000;

/**
 * Listens on `port`: on every interface when requests need a key, and on loopback only when they do not (an API
 * without keys must not be reachable from other machines), saying so in the log. Returns the address (`http://…`).
 */
export async function listenApi(
  server: ApiApp,
  options: { port: number; authEnabled: boolean; logger: Logger },
): Promise<string> {
  const host = options.authEnabled ? '0.0.0.0' : '127.0.0.1';
  const url = await server.listen({ port: options.port, host });
  if (!options.authEnabled) {
    options.logger.warn(
      { url },
      'no API keys configured (AGENTLOOM_API_KEYS): listening on loopback only, requests need no key',
    );
  }
  return url;
}

/**
 * The HTTP API over a started engine, listening (see {@link listenApi}): what `agentloom api` and `agentloom dev`
 * both start. When it cannot listen, the server and the engine are closed before the error is rethrown.
 */
export async function serveApi(
  engine: Engine,
  options: { apiKeys: readonly ApiKey[]; port: number; logger: Logger; metricsRegistries?: Registry[] },
): Promise<{ server: ApiApp; url: string }> {
  const { apiKeys, port, logger } = options;
  let server: ApiApp | undefined;
  try {
    server = await createApiServer({
      engine,
      apiKeys,
      logger,
      ...(options.metricsRegistries ? { metricsRegistries: options.metricsRegistries } : {}),
    });
    const url = await listenApi(server, { port, authEnabled: apiKeys.length > 0, logger });
    return { server, url };
  } catch (err) {
    await server?.close().catch(() => undefined);
    await engine.close();
    throw err;
  }
}

/** A started API process. */
export interface RunningApi {
  engine: Engine;
  server: ApiApp;
  url: string;
  /** Closes the server and the engine (what SIGTERM does). */
  shutdown(): Promise<void>;
}

/** Starts an API process from its configuration and installs the signal handlers. */
export async function runApi(config: ApiConfig, logger?: Logger): Promise<RunningApi> {
  const log = processLogger(config.logLevel, logger);
  const engine = await createEngine({
    apps: config.apps,
    database: config.databaseUrl,
    queue: queueOption(config),
    worker: false,
    logger: log,
  });
  const { server, url } = await serveApi(engine, { apiKeys: config.apiKeys, port: config.port, logger: log });
  const shutdown = handleShutdownSignals({
    name: 'api',
    logger: log,
    forceExitAfterMs: FORCE_EXIT_MS,
    stop: async () => {
      await server.close();
      await engine.close();
    },
  });
  log.info(
    {
      url,
      queue: config.queue,
      auth: config.apiKeys.length > 0 ? 'keys' : 'none',
      keys: config.apiKeys.map((k) => k.name),
      apps: [...engine.apps.values()].map((a) => ({ name: a.name, definitionHash: a.definitionHash })),
    },
    'api listening',
  );
  return { engine, server, url, shutdown };
}
