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
import type { ApiConfig } from './api-config.js';
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
  let server: ApiApp;
  let url: string;
  try {
    server = await createApiServer({ engine, apiKeys: config.apiKeys, logger: log });
    url = await listenApi(server, { port: config.port, authEnabled: config.apiKeys.length > 0, logger: log });
  } catch (err) {
    await engine.close();
    throw err;
  }
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
