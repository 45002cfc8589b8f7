/**
 * ADK's own dev UI (`adk web`'s Angular app, shipped built in `@google/adk-devtools`), served at `/dev-ui/` by
 * `agentloom dev` when that package is installed. We do not depend on it: its runtime dependencies (every
 * mikro-orm driver, express, ADK itself) are far heavier than the 8 MB of browser files we serve from it. The UI
 * talks to the ADK routes of adk-routes.ts on the same origin and sends no Authorization header, so it is served
 * only by a server without keys (which listens on loopback only).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, parse } from 'node:path';
import fastifyStatic from '@fastify/static';
import { packageRoot } from '../../core/package-root.js';
import type { ApiApp } from '../http/context.js';

/** The package whose browser build is ADK's dev UI. */
export const ADK_DEVTOOLS_PACKAGE = '@google/adk-devtools';

/** Where the dev UI is served. */
export const DEV_UI_PREFIX = '/dev-ui/';

/** Whether a route serves the dev UI's files (public: they are the same for everyone). */
export function isDevUiRoute(url: string): boolean {
  return url === '/dev-ui' || url.startsWith(DEV_UI_PREFIX);
}

/**
 * The package's folder from the file its main export resolves to: the nearest folder whose package.json names it
 * (dist/cjs has a package.json of its own, naming nothing).
 */
function packageDirOf(file: string): string | undefined {
  const { root } = parse(file);
  for (let dir = dirname(file); dir !== root; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    try {
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
      if (name === ADK_DEVTOOLS_PACKAGE) return dir;
    } catch {
      // Not JSON: not the package's manifest.
    }
  }
  return undefined;
}

/**
 * The dev UI's browser build (the folder holding its index.html) of `@google/adk-devtools` as Node would resolve
 * it from `from` (the working directory first, then agentloom's own folder), or undefined when it is not
 * installed. Only the path is resolved: nothing of the package is loaded.
 */
export function findAdkDevUi(from: readonly string[] = [process.cwd(), packageRoot()]): string | undefined {
  for (const base of from) {
    let main: string;
    try {
      main = createRequire(join(base, 'noop.js')).resolve(ADK_DEVTOOLS_PACKAGE);
    } catch {
      continue;
    }
    const dir = packageDirOf(main);
    const browser = dir === undefined ? undefined : join(dir, 'dist', 'browser');
    if (browser !== undefined && existsSync(join(browser, 'index.html'))) return browser;
  }
  return undefined;
}

/**
 * Serves the UI at `/dev-ui/` (`/dev-ui` redirects there, as ADK's servers do, so that the page's `<base
 * href="./">` resolves under it). Its files are named by content hash except index.html and assets/, which are
 * revalidated.
 */
export async function devUiRoutes(app: ApiApp, dir: string): Promise<void> {
  app.get('/dev-ui', { schema: { hide: true } }, (_request, reply) => reply.redirect(DEV_UI_PREFIX));
  await app.register(fastifyStatic, {
    root: dir,
    prefix: DEV_UI_PREFIX,
    decorateReply: false,
    index: ['index.html'],
    redirect: true,
    cacheControl: false,
    setHeaders: (reply, path) => {
      const hashed = /-[A-Z0-9]{8}\.(js|css)$/.test(path);
      reply.header('cache-control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}
