/**
 * An API process (`agentloom api`): an engine with `worker: false` on PostgreSQL and the shared queue (it enqueues
 * and reads, never runs steps), behind the HTTP API. Start as many as you like behind a load balancer. SIGTERM /
 * SIGINT close it: open event streams end (clients resume elsewhere with Last-Event-ID), then it exits 0.
 */
import { pino, type Logger } from 'pino';
import { createEngine } from '../engine/create-engine.js';
import type { Engine } from '../engine/engine.js';
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
  const log = logger ?? pino({ level: config.logLevel, base: { pid: process.pid } });
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  const queue =
    config.queue === 'redis'
      ? { redis: config.redisUrl as string, prefix: config.prefix }
      : { postgres: config.databaseUrl, prefix: config.prefix };
  const engine = await createEngine({
    apps: config.apps,
    database: config.databaseUrl,
    queue,
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
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> =>
    (stopping ??= (async () => {
      log.info('api stopping');
      await server.close();
      await engine.close();
      log.info('api stopped');
    })());
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      setTimeout(() => {
        log.warn({ afterMs: FORCE_EXIT_MS }, 'api stop timed out; exiting');
        process.exit(0);
      }, FORCE_EXIT_MS).unref();
      shutdown()
        .then(() => process.exit(0))
        .catch((err: unknown) => {
          log.error({ err }, 'api shutdown failed');
          process.exit(1);
        });
    });
  }
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
