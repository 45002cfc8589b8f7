/**
 * The web console (console/, built into dist/console/ by console/build.ts): `GET /` answers its page and
 * `/console/*` its script and stylesheet, brotli or gzip as the browser accepts, from files compressed at build
 * time. The page is always revalidated; the assets are named by content hash and cached for good. None of it needs
 * a key: the console asks for one and sends it with its API calls.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { packageRoot } from '../../core/package-root.js';
import type { ApiApp } from '../http/context.js';
import { HttpError } from '../http/errors.js';

/** Where the built console is. */
export function consoleDir(): string {
  return join(packageRoot(), 'dist', 'console');
}

/** Whether a route serves the console (public: the page asks for a key itself). */
export function isConsoleRoute(url: string): boolean {
  return url === '/' || url.startsWith('/console/');
}

/** Registers the console's routes; without a build, `GET /` says how to make one. */
export async function consoleRoutes(app: ApiApp, dir = consoleDir()): Promise<void> {
  if (!existsSync(join(dir, 'index.html'))) {
    app.get('/', { schema: { hide: true } }, async () => {
      throw new HttpError(
        503,
        'UNAVAILABLE',
        'the web console is not built: run `npm run build:console` (npm install and npm start build it)',
      );
    });
    return;
  }
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/console/',
    wildcard: false,
    index: false,
    preCompressed: true,
    maxAge: '365d',
    immutable: true,
    // index.html is served at `/` only.
    allowedPath: (path) => path !== '/index.html' && !/\.(br|gz)$/.test(path),
  });
  app.get('/', { schema: { hide: true } }, (_request, reply) =>
    reply
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header(
        'content-security-policy',
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
      )
      .sendFile('index.html', dir, { cacheControl: false }),
  );
}
