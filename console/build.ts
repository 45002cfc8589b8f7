/**
 * Builds the web console (console/) into dist/console/: one minified ES module bundle (Preact and the console's
 * code), its stylesheet, and index.html pointing at both by content hash; each file also brotli- and
 * gzip-compressed, so the API serves compressed files without compressing per request. Run by `npm install`
 * (prepare), `npm start` (prestart), `npm run build` and the console's tests.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** What was built: each file's size as served raw and compressed (brotli), in bytes. */
export interface ConsoleBuild {
  outDir: string;
  files: { name: string; bytes: number; brotliBytes: number; gzipBytes: number }[];
  /** The same build was there already; nothing was written. */
  unchanged: boolean;
}

/** Builds the console into `outDir` (default dist/console). */
export async function buildConsole(outDir = join(root, 'dist', 'console')): Promise<ConsoleBuild> {
  const result = await build({
    entryPoints: { app: join(root, 'console', 'src', 'main.tsx') },
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    write: false,
    outdir: outDir,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'));
  if (!js) throw new Error('esbuild wrote no JavaScript for the console');
  const css = await readFile(join(root, 'console', 'src', 'styles.css'), 'utf8');
  const version = createHash('sha256').update(js.contents).update(css).digest('hex').slice(0, 12);
  const html = (await readFile(join(root, 'console', 'index.html'), 'utf8')).replaceAll('%VERSION%', version);
  const files: [string, Buffer][] = [
    ['index.html', Buffer.from(html)],
    ['app.js', Buffer.from(js.contents)],
    ['app.css', Buffer.from(css)],
  ];
  const built: ConsoleBuild['files'] = [];
  if (await isBuilt(outDir, files, html)) {
    // The same build is there: leave it, so servers reading it meanwhile (tests) never see it half written.
    for (const [name, contents] of files) {
      const [br, gz] = await Promise.all([
        readFile(join(outDir, `${name}.br`)),
        readFile(join(outDir, `${name}.gz`)),
      ]);
      built.push({ name, bytes: contents.length, brotliBytes: br.length, gzipBytes: gz.length });
    }
    return { outDir, files: built, unchanged: true };
  }
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  for (const [name, contents] of files) {
    const br = await brotli(contents, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
    const gz = await gzipAsync(contents, { level: 9 });
    await writeFile(join(outDir, name), contents);
    await writeFile(join(outDir, `${name}.br`), br);
    await writeFile(join(outDir, `${name}.gz`), gz);
    built.push({ name, bytes: contents.length, brotliBytes: br.length, gzipBytes: gz.length });
  }
  return { outDir, files: built, unchanged: false };
}

/** Whether `outDir` holds exactly these files already (with their compressed twins). */
async function isBuilt(outDir: string, files: [string, Buffer][], html: string): Promise<boolean> {
  try {
    if ((await readFile(join(outDir, 'index.html'), 'utf8')) !== html) return false;
    for (const [name, contents] of files) {
      if (!(await readFile(join(outDir, name))).equals(contents)) return false;
      await Promise.all([stat(join(outDir, `${name}.br`)), stat(join(outDir, `${name}.gz`))]);
    }
    return true;
  } catch {
    return false;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { outDir, files, unchanged } = await buildConsole();
  const total = files.reduce((sum, f) => sum + f.gzipBytes, 0);
  console.log(
    `console: ${unchanged ? 'up to date' : 'built'} ${outDir} (${files.map((f) => `${f.name} ${(f.gzipBytes / 1024).toFixed(1)} KB gz`).join(', ')}; ${(total / 1024).toFixed(1)} KB gz in all)`,
  );
}
