/**
 * `agentloom validate PATH`: checks apps without running anything. A `.js` / `.ts` apps module is loaded as
 * `dev --apps` loads it and checked by engine/apps/check-apps-module.ts (its exports, apps, agents, the tool and
 * model names they use): valid, one summary line, exit 0; invalid, every problem as `PATH: message`, exit 1.
 * Declarative apps (agentloom YAML or kagent Agent manifests) are checked through the loader's own code path with the names `dev` / `worker --apps PATH` would have: the built-in
 * tools, Gemini ids, the files' ModelConfigs, and with `--registry MODULE` that module's `tools` / `models` (what
 * `createEngine({ apps: PATH, tools, models })` gets). Every environment variable the files name (their secrets) must
 * be set, as in the processes that serve them; with `--no-env` (checking files away from their deployment) a missing
 * one is a warning, `file:line:col: warning: path: message`. Valid: one summary line, exit 0. Invalid: every
 * problem as `file:line:col: path: message`, exit 1.
 */
import { checkAppsYaml, formatProblem, type YamlAppsCheck } from '../config/apps/load-apps.js';
import { hasErrorCode } from '../core/errors.js';
import { loadRegistries } from '../engine/apps/apps-module.js';
import { checkAppsModule, isAppsModulePath, type AppsModuleCheck } from '../engine/apps/check-apps-module.js';
import { registerApps, type RegisteredApp } from '../engine/apps/registry.js';

/** Flags of `agentloom validate`. */
export interface ValidateFlags {
  /** A module exporting `tools` / `models`: names the files may use besides the built-in ones. */
  registry?: string;
  /** false (`--no-env`): a variable the files name that this environment lacks is a warning, not a problem. */
  env?: boolean;
}

/** Validates `path`, prints the outcome, and returns the exit code (0 valid, 1 invalid, 2 bad usage). */
export async function runValidate(path: string, flags: ValidateFlags): Promise<number> {
  if (isAppsModulePath(path)) return validateModule(path, flags);
  let checked: YamlAppsCheck;
  try {
    const registries = flags.registry ? await loadRegistries(flags.registry) : {};
    checked = await checkAppsYaml(path, registries, {
      missingEnv: flags.env === false ? 'warning' : 'error',
    });
  } catch (err) {
    // A path that does not exist, a folder without YAML, a registry module that does not load: bad usage.
    if (!hasErrorCode(err, 'CONFIG')) throw err;
    console.error(`agentloom: CONFIG: ${(err as Error).message}`);
    return 2;
  }
  const { apps, problems, warnings } = checked;
  for (const warning of warnings) {
    const { file, line, col, path: at, message } = warning;
    console.log(`${file}:${line}:${col}: warning: ${at}: ${message}`);
  }
  if (problems.length > 0) {
    for (const problem of problems) console.log(formatProblem(problem));
    console.log(`${problems.length === 1 ? '1 problem' : `${problems.length} problems`} in ${path}`);
    return 1;
  }
  const names = flags.registry
    ? `built-in tools, provider model ids and ${flags.registry}`
    : 'built-in tools and provider model ids; --registry MODULE adds tools and models registered in code';
  printValid(path, [...registerApps(apps).values()], names);
  return 0;
}

/** Validates an apps module (a `.js` / `.ts` file), as `dev --apps` loads it. */
async function validateModule(path: string, flags: ValidateFlags): Promise<number> {
  let checked: AppsModuleCheck;
  try {
    const registries = flags.registry ? await loadRegistries(flags.registry) : {};
    checked = await checkAppsModule(path, registries);
  } catch (err) {
    // A path that does not exist, a registry module that does not load: bad usage.
    if (!hasErrorCode(err, 'CONFIG')) throw err;
    console.error(`agentloom: CONFIG: ${(err as Error).message}`);
    return 2;
  }
  const { apps, problems } = checked;
  if (problems.length > 0) {
    for (const problem of problems) console.log(`${path}: ${problem}`);
    console.log(`${problems.length === 1 ? '1 problem' : `${problems.length} problems`} in ${path}`);
    return 1;
  }
  const extra = flags.registry ? ` and ${flags.registry}'s` : '';
  printValid(path, apps, `built-in tools, provider model ids and the module's${extra} tools and models`);
  return 0;
}

/** The one line of a valid path: its apps as an engine registers them, and what names were checked against. */
function printValid(path: string, registered: readonly RegisteredApp[], names: string): void {
  const summary = registered
    .map((app) => `${app.name} (${app.agents.size} agents, definition ${app.definitionHash.slice(0, 12)})`)
    .join(', ');
  console.log(
    `ok: ${path}: ${registered.length === 1 ? '1 app' : `${registered.length} apps`}: ${summary}; names checked against ${names}`,
  );
}
