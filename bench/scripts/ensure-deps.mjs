// Installs bench/'s dependencies when any is missing (npm run bench at the repository root runs this first).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..');
const { dependencies = {} } = JSON.parse(readFileSync(join(bench, 'package.json'), 'utf8'));
const missing = Object.keys(dependencies).filter(
  (name) => !existsSync(join(bench, 'node_modules', name, 'package.json')),
);
if (missing.length > 0) {
  console.log(`bench: installing bench/ dependencies (missing: ${missing.join(', ')})`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['install', '--no-audit', '--no-fund'], { cwd: bench, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
