/**
 * `npm run lint` part: no source file over its size limit (STYLE.md "Size"): 400 lines under src/engine/step/ (the
 * step machinery stays split by role), 500 anywhere else under src/, and 500 for the tests (test/), the bench's
 * sources (bench/src/, bench/scripts/) and the repository's scripts (scripts/) — a long test file is split by
 * concern like a long source file, its shared setup moved to test/support/. Exits 1 naming each file over.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The folders checked, and the limits: the first prefix a file's path starts with gives its limit. */
const ROOTS = ['src', 'test', 'bench/src', 'bench/scripts', 'scripts'];
const LIMITS: { prefix: string; max: number }[] = [
  { prefix: 'src/engine/step/', max: 400 },
  { prefix: '', max: 500 },
];

/** Folders never walked: installed packages, and data a run writes (bench/results/ is not under bench/src/). */
const SKIP = new Set(['node_modules', 'dist', '.agentloom']);

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) yield* sourceFiles(path);
    } else if (/\.(ts|tsx|js|mjs|cjs)$/.test(entry.name)) yield path;
  }
}

const over: string[] = [];
for (const root of ROOTS.filter((r) => existsSync(r)))
  for (const file of sourceFiles(root)) {
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    const limit = LIMITS.find((l) => file.startsWith(l.prefix));
    if (limit && lines > limit.max)
      over.push(`${file}: ${lines} lines (at most ${limit.max}: split it by role)`);
  }
if (over.length > 0) {
  console.error(`file sizes: ${over.length} file(s) too long\n${over.join('\n')}`);
  process.exit(1);
}
