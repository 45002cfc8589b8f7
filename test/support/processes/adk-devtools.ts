/**
 * ADK's dev UI for the tests that drive it: `@google/adk-devtools` as `npm pack` fetches it from the registry (its
 * files only: none of its dependencies, which serving its browser build does not need), unpacked once per machine
 * under node_modules/.cache as a folder where Node resolves the package. A `dev` started in that folder finds the UI
 * the way it finds an installed one.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './cli.js';

const run = promisify(execFile);

/** The version the tests drive: the build adk-python 2.5 ships too. */
export const ADK_DEVTOOLS_VERSION = '2.0.0';

const CACHE = join(REPO, 'node_modules', '.cache', 'agentloom-tests');

/** A folder whose node_modules holds `@google/adk-devtools` (fetched and unpacked the first time). */
export async function adkDevtoolsProject(): Promise<string> {
  const project = join(CACHE, `adk-devtools-${ADK_DEVTOOLS_VERSION}`);
  const marker = join(project, 'node_modules', '@google', 'adk-devtools', 'dist', 'browser', 'index.html');
  if (existsSync(marker)) return project;
  mkdirSync(CACHE, { recursive: true });
  // Unpacked beside, then renamed into place: a concurrent or interrupted fetch never leaves half a package.
  const work = mkdtempSync(join(CACHE, 'fetch-'));
  try {
    const { stdout } = await run(
      'npm',
      ['pack', `@google/adk-devtools@${ADK_DEVTOOLS_VERSION}`, '--pack-destination', work, '--silent'],
      { cwd: work, timeout: 300_000 },
    );
    const tarball = join(work, stdout.trim().split('\n').pop() ?? '');
    const target = join(work, 'project', 'node_modules', '@google', 'adk-devtools');
    mkdirSync(target, { recursive: true });
    await run('tar', ['xzf', tarball, '-C', target, '--strip-components=1']);
    if (!existsSync(marker)) {
      rmSync(project, { recursive: true, force: true });
      renameSync(join(work, 'project'), project);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  if (!existsSync(marker)) throw new Error(`@google/adk-devtools unpacked without ${marker}`);
  return project;
}
