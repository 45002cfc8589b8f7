/**
 * Bundles the compiled CLI (dist/src/cli/main.js) into dist/cli/ for the commands that start often: the client
 * commands, `migrate`, `prune` and help. A client command otherwise resolves and evaluates ~130 ES
 * modules (zod's ~95 of them) before it sends its one request; one bundle with zod, commander and
 * eventsource-parser inside halves that start. Code splitting keeps each command's code in its own chunk, loaded
 * by the command's dynamic import, so a client command never loads the server side; every other package stays an
 * import of node_modules. bin/agentloom.js runs the bundle when it is current. meta.json (esbuild's metafile) says
 * which sources each chunk holds: the module-graph test reads it.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The packages bundled in: the pure-JavaScript ones of the client path. Every other package stays external. */
const BUNDLED = new Set(['zod', 'commander', 'eventsource-parser']);

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

const externals: Plugin = {
  name: 'agentloom-externals',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      BUNDLED.has(packageOf(args.path)) ? undefined : { path: args.path, external: true },
    );
  },
};

const outDir = join(root, 'dist', 'cli');
await rm(outDir, { recursive: true, force: true });
const result = await build({
  entryPoints: [join(root, 'dist', 'src', 'cli', 'main.js')],
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: outDir,
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
  // commander is CommonJS: its require() of Node's modules needs a require in an ES module.
  banner: {
    js: "import { createRequire as __agentloomRequire } from 'node:module'; const require = __agentloomRequire(import.meta.url);",
  },
  plugins: [externals],
});
await writeFile(join(outDir, 'meta.json'), JSON.stringify(result.metafile));
