/**
 * An API process (`agentloom api`): an engine with `worker: false` on PostgreSQL and the shared queue (it enqueues
 * and reads, never runs steps), behind the HTTP API. Start as many as you like behind a load balancer. SIGTERM /
 * SIGINT close it: open event streams end (clients resume elsewhere with Last-Event-ID), then it exits 0.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { backendOptions } from '../config/process-config.js';
import type { Engine } from '../engine/engine.js';
import { appVersions, startProcess } from '../engine/process-lifecycle.js';
import type { ApiConfig } from './api-config.js';
import type { ApiKey } from './http/auth.js';
import type { ApiApp } from './http/context.js';
import { createApiServer } from './server.js';

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
 * both serve. `close` closes the server (open event streams end); when it cannot listen, the server is closed
 * before the error is rethrown (the engine is its caller's).
 */
export async function serveApi(
  engine: Engine,
  options: {
    apiKeys: readonly ApiKey[];
    port: number;
    logger: Logger;
    metricsRegistries?: Registry[];
    /** ADK's dev UI to serve at `/dev-ui/` (only without keys). */
    adkDevUiDir?: string;
  },
): Promise<{ server: ApiApp; url: string; close: () => Promise<void> }> {
  const { apiKeys, port, logger } = options;
  let server: ApiApp | undefined;
  try {
    server = await createApiServer({
      engine,
      apiKeys,
      logger,
      ...(options.metricsRegistries ? { metricsRegistries: options.metricsRegistries } : {}),
      ...(options.adkDevUiDir !== undefined ? { adkDevUiDir: options.adkDevUiDir } : {}),
    });
    const url = await listenApi(server, { port, authEnabled: apiKeys.length > 0, logger });
    const listening = server;
    return { server, url, close: () => listening.close() };
  } catch (err) {
    await server?.close().catch(() => undefined);
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
  const started = await startProcess({
    name: 'api',
    logLevel: config.logLevel,
    logger,
    engine: { ...backendOptions(config), worker: false },
    serve: (engine, log) => serveApi(engine, { apiKeys: config.apiKeys, port: config.port, logger: log }),
  });
  const { engine, served, shutdown } = started;
  started.logger.info(
    {
      url: served.url,
      console: `${served.url}/`,
      queue: config.queue,
      auth: config.apiKeys.length > 0 ? 'keys' : 'none',
      keys: config.apiKeys.map((k) => k.name),
      apps: appVersions(engine),
    },
    'api listening',
  );
  return { engine, server: served.server, url: served.url, shutdown };
}
