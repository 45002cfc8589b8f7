/**
 * `agentloom validate PATH`: checks declarative apps (agentloom YAML or kagent Agent manifests) without running
 * anything, through the loader's own code path with the names `dev` / `worker --apps PATH` would have: the built-in
 * tools, Gemini ids, the files' ModelConfigs, and with `--registry MODULE` that module's `tools` / `models` (what
 * `createEngine({ apps: PATH, tools, models })` gets). Every environment variable the files name (their secrets) must
 * be set, as in the processes that serve them; with `--no-env` (checking files away from their deployment) a missing
 * one is a warning, `file:line:col: warning: path: message`. Valid: one summary line, exit 0. Invalid: every
 * problem as `file:line:col: path: message`, exit 1.
 */
import { checkAppsYaml, formatProblem, type YamlAppsCheck } from '../config/apps/load-apps.js';
import { hasErrorCode } from '../core/errors.js';
import { loadRegistries } from '../engine/apps/apps-module.js';
import { registerApps } from '../engine/apps/registry.js';

/** Flags of `agentloom validate`. */
export interface ValidateFlags {
  /** A module exporting `tools` / `models`: names the files may use besides the built-in ones. */
  registry?: string;
  /** false (`--no-env`): a variable the files name that this environment lacks is a warning, not a problem. */
  env?: boolean;
}

/** Validates `path`, prints the outcome, and returns the exit code (0 valid, 1 invalid, 2 bad usage). */
export async function runValidate(path: string, flags: ValidateFlags): Promise<number> {
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
  const registered = [...registerApps(apps).values()];
  const summary = registered
    .map((app) => `${app.name} (${app.agents.size} agents, definition ${app.definitionHash.slice(0, 12)})`)
    .join(', ');
  const names = flags.registry
    ? `built-in tools, provider model ids and ${flags.registry}`
    : 'built-in tools and provider model ids; --registry MODULE adds tools and models registered in code';
  console.log(
    `ok: ${path}: ${registered.length === 1 ? '1 app' : `${registered.length} apps`}: ${summary}; names checked against ${names}`,
  );
  return 0;
}
