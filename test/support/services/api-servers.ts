/**
 * An engine and its API servers for one test file (or one describe): started in `beforeAll`, closed in `afterAll`
 * (the servers first, then the engine). Used by the integration and e2e files that drive the engine over HTTP.
 * Call at the top level of a file or describe; the fields are set once its `beforeAll` ran.
 */
import { afterAll, beforeAll } from 'vitest';
import { createApiServer, type ApiApp, type ApiServerOptions } from '../../../src/api/index.js';
import type { Engine } from '../../../src/index.js';

/** An API server of the test: the app and the base URL it listens on (loopback, a free port). */
export interface ServedApi {
  readonly server: ApiApp;
  readonly base: string;
}

/** An engine served by an API server. */
export interface ServedEngine extends ServedApi {
  readonly engine: Engine;
}

function started<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is set in beforeAll: read it inside a hook or a test`);
  return value;
}

/**
 * An API server on `engine()` (read in `beforeAll`) with `options`, listening on 127.0.0.1 from `beforeAll`
 * until `afterAll`. A second server on an engine of {@link serveEngine} is closed before that engine.
 */
export function serveApi(engine: () => Engine, options: Omit<ApiServerOptions, 'engine'> = {}): ServedApi {
  let server: ApiApp | undefined;
  let base: string | undefined;
  beforeAll(async () => {
    server = await createApiServer({ ...options, engine: engine() });
    base = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    get server() {
      return started(server, 'server');
    },
    get base() {
      return started(base, 'base');
    },
  };
}

/**
 * The engine `start()` makes in `beforeAll`, served by an API server with `options`; the server, then the engine,
 * are closed in `afterAll`.
 */
export function serveEngine(
  start: () => Promise<Engine>,
  options: Omit<ApiServerOptions, 'engine'> = {},
): ServedEngine {
  let engine: Engine | undefined;
  beforeAll(async () => {
    engine = await start();
  });
  // Registered before the server's: vitest runs afterAll hooks in reverse, so the server closes first.
  afterAll(async () => {
    await engine?.close();
  });
  const api = serveApi(() => started(engine, 'engine'), options);
  return {
    get engine() {
      return started(engine, 'engine');
    },
    get server() {
      return api.server;
    },
    get base() {
      return api.base;
    },
  };
}
