/**
 * Fails when src/store/db/schema.ts has changes that no committed migration covers: runs drizzle-kit generate
 * into a scratch copy of migrations/ and checks that it had nothing to write.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'agentloom-drift-'));
try {
  const out = join(scratch, 'migrations');
  cpSync(join(root, 'migrations'), out, { recursive: true });
  const config = join(scratch, 'drizzle.config.mjs');
  writeFileSync(
    config,
    `export default { dialect: 'postgresql', schema: './src/store/db/schema.ts', out: ${JSON.stringify(relative(root, out))} };\n`,
  );
  const before = readdirSync(out).length;
  const result = spawnSync(join(root, 'node_modules/.bin/drizzle-kit'), ['generate', '--config', config], {
    cwd: root,
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    console.error(result.stdout, result.stderr);
    process.exit(1);
  }
  const after = readdirSync(out).length;
  if (after !== before || !/No schema changes/i.test(result.stdout)) {
    console.error(
      'migrations drift: src/store/db/schema.ts changed without a migration. Run `npm run db:generate` and commit migrations/.',
    );
    console.error(result.stdout, result.stderr);
    process.exit(1);
  }
  console.log('migrations: no drift from src/store/db/schema.ts');
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
