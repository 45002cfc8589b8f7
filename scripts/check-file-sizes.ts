/**
 * `npm run lint` part: no source file over its size limit (STYLE.md "Size"; issue 17): 500 lines anywhere under
 * src/, 400 under src/engine/step/ (the step machinery stays split by role). Exits 1 naming each file over.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const LIMITS: { prefix: string; max: number }[] = [
  { prefix: 'src/engine/step/', max: 400 },
  { prefix: 'src/', max: 500 },
];

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx|js|mjs)$/.test(entry.name)) yield path;
  }
}

const over: string[] = [];
for (const file of sourceFiles('src')) {
  const lines = readFileSync(file, 'utf8').split('\n').length - 1;
  const limit = LIMITS.find((l) => file.startsWith(l.prefix));
  if (limit && lines > limit.max)
    over.push(`${file}: ${lines} lines (at most ${limit.max}: split it by role)`);
}
if (over.length > 0) {
  console.error(`file sizes: ${over.length} file(s) too long\n${over.join('\n')}`);
  process.exit(1);
}
