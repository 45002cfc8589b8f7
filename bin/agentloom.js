#!/usr/bin/env node
// The agentloom CLI. An installed package runs its compiled build. A source checkout (src/ present) runs the build
// (made at install by `npm run build`, the `prepare` script) for the commands that load no apps module — the client
// commands, `migrate`, `prune`, help, and dev / worker / api / validate / demo given only YAML apps — when the build
// is at least as new as every file under src/ (a stat of each: a few milliseconds), so a stale build never runs;
// every other command, and any command without a current build, runs the TypeScript sources through tsx: the apps
// modules of a checkout import the sources, and an agent built from one copy of the classes is not an agent to the
// other. Those commands run from the bundle of dist/cli/ (scripts/bundle-cli.ts: one file and its chunks instead of
// ~130 modules, half the start); the others from dist/src/, the copy of the classes an installed package's apps
// import.
import { existsSync, readdirSync, statSync } from 'node:fs';
import nodeModule from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const bundled = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const sources = fileURLToPath(new URL('../src', import.meta.url));

/** True when some file under `dir` was modified after `time` (ms). */
function newerThan(dir, time) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() ? newerThan(path, time) : statSync(path).mtimeMs > time) return true;
  }
  return false;
}

/** Commands that load no apps module (what the first argument may be). */
const BUILD_COMMANDS = new Set([
  'run',
  'status',
  'events',
  'approve',
  'reject',
  'respond',
  'cancel',
  'retry',
  'auth',
  'credentials',
  'fork',
  'replay',
  'diff',
  'migrate',
  'prune',
  'help',
  '--help',
  '-h',
  undefined,
]);

/** Commands that load apps: in a checkout they run the bundle too when no module is named (see {@link namesModule}). */
const APPS_COMMANDS = new Set(['dev', 'worker', 'api', 'validate', 'demo']);

/**
 * True when an argument or AGENTLOOM_APPS names a JavaScript or TypeScript module (an apps module, a --registry).
 * Without one, the apps are YAML files or folders (or the built-in example), which import no class of the checkout:
 * the bundle serves them as the sources would, and starts a few seconds sooner than tsx compiling ~300 modules.
 */
function namesModule(args) {
  const values = args.flatMap((arg) => (arg.startsWith('--') ? arg.split('=').slice(1) : [arg]));
  return [...values, process.env.AGENTLOOM_APPS ?? ''].some((value) => /\.[cm]?[jt]sx?$/i.test(value));
}

/** The build to run (the bundle or dist/src/), or undefined to run the sources. */
function buildToRun() {
  const [command, ...args] = process.argv.slice(2);
  const client =
    (BUILD_COMMANDS.has(command) || (APPS_COMMANDS.has(command) && !namesModule(args))) &&
    existsSync(bundled);
  if (!existsSync(sources)) return client ? bundled : existsSync(compiled) ? compiled : undefined;
  if (!client) return undefined;
  return newerThan(sources, statSync(bundled).mtimeMs) ? undefined : bundled;
}

// Node 22.1+ keeps the bytecode of the modules it compiled in a cache directory (under the OS's temp directory),
// so a second start skips compiling: ~50 ms of a client command's ~250 ms on Node 24. Node 20 has no such cache.
nodeModule.enableCompileCache?.();

const build = buildToRun();
if (build) {
  await import(pathToFileURL(build).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/main.ts', import.meta.url).href);
}
