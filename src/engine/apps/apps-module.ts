/**
 * Loading apps from a path (`--apps PATH`, `AGENTLOOM_APPS`, `createEngine({ apps: 'path' })`): a JS or TS
 * module exporting `apps` (AppDefinition[]) and optionally `tools` and `models` (records by name), `rateLimits`
 * (the engine's `rateLimits`, so `agentloom worker` processes share them) and `plugins` (BasePlugin instances that
 * apply to every agent of its apps, after the engine's own `plugins`), or declarative
 * apps — a `.yaml` / `.yml` file or a folder of them (agentloom YAML or kagent Agent manifests, see
 * config/apps/load-apps.ts).
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isYamlAppsPath, loadAppsFromYaml, type Registries } from '../../config/apps/load-apps.js';
import { AgentloomError } from '../../core/errors.js';
import type { Model } from '../../models/model.js';
import type { Tool } from '../../tools/tool.js';
import { validateRateLimits, type ModelRateLimit } from '../../queue/rate-limits.js';
import type { AppDefinition } from './registry.js';

/** What an apps module provides. */
export interface AppsModule {
  apps: AppDefinition[];
  tools: Record<string, Tool>;
  models: Record<string, Model>;
  /** The module's `rateLimits` export, checked (see createEngine's `rateLimits`). */
  rateLimits?: Record<string, ModelRateLimit>;
  /** The module's `plugins` export (checked when the engine registers them: names, callback names). */
  plugins?: readonly unknown[];
}

const TS = /\.(c|m)?tsx?$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether this module registered tsx's loader (once per process). */
let tsxRegistered = false;

/**
 * Imports a module. A TypeScript module loads as it is when this process runs with tsx's loader (the CLI does when
 * it runs the sources), and otherwise (the compiled CLI: `dist/`, the Docker image) after registering tsx's loader
 * for the whole process (tsx is a dependency). Not through `tsImport`: that loads the module in a namespace of its
 * own, where its `import … from 'agentloom'` would be a second copy of the package, whose agents this engine
 * would not recognise as agents.
 */
async function importModule(url: string, typescript: boolean): Promise<Record<string, unknown>> {
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if (!typescript || (err as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
    if (!tsxRegistered) {
      const { register } = await import('tsx/esm/api');
      register();
      tsxRegistered = true;
    }
    // Another URL for the same file: the loader remembers the failed import of the first one.
    return (await import(`${url}${url.includes('?') ? '&' : '?'}ts`)) as Record<string, unknown>;
  }
}

/**
 * Imports an apps module and checks its exports; CONFIG errors say what the module must export. A YAML file or a
 * folder loads through {@link loadAppsFromYaml} instead (VALIDATION listing every problem): its tool and model
 * names are checked against what the engine will have — the built-in tools, Gemini ids, the files' ModelConfigs
 * and `registries` (none when absent) — as `agentloom validate PATH [--registry MODULE]` checks them.
 */
export async function loadAppsModule(path: string, registries?: Registries): Promise<AppsModule> {
  const file = resolve(path);
  if (isYamlAppsPath(file)) {
    const { apps } = await loadAppsFromYaml(path, registries ?? {});
    return { apps, tools: registries?.tools ?? {}, models: registries?.models ?? {} };
  }
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new AgentloomError(
      'CONFIG',
      `apps module ${file} does not exist: pass --apps (or AGENTLOOM_APPS) the path of a .js or .ts module exporting \`apps\`, a .yaml file or a folder of them`,
      { details: { field: 'apps', path: file } },
    );
  }
  let mod: Record<string, unknown>;
  try {
    const url = pathToFileURL(file).href;
    mod = await importModule(url, TS.test(file));
  } catch (err) {
    throw new AgentloomError('CONFIG', `apps module ${file} failed to load: ${(err as Error).message}`, {
      details: { field: 'apps', path: file },
      cause: err,
    });
  }
  // A CommonJS or transpiled module may carry its exports on `default`.
  const exports = isRecord(mod.default) && !('apps' in mod) ? mod.default : mod;
  const { apps, tools = {}, models = {}, rateLimits, plugins } = exports;
  if (!Array.isArray(apps)) {
    throw new AgentloomError(
      'CONFIG',
      `apps module ${file} must export \`apps\`: an array of { name, agent } (e.g. export const apps = [{ name: 'writer', agent: root }])`,
      { details: { field: 'apps', path: file } },
    );
  }
  for (const [name, value] of [
    ['tools', tools],
    ['models', models],
  ] as const) {
    if (!isRecord(value)) {
      throw new AgentloomError(
        'CONFIG',
        `apps module ${file}: \`${name}\` must be an object mapping names to ${name} (e.g. export const ${name} = { … })`,
        { details: { field: name, path: file } },
      );
    }
  }
  if (plugins !== undefined && !Array.isArray(plugins)) {
    throw new AgentloomError(
      'CONFIG',
      `apps module ${file}: \`plugins\` must be an array of plugins (e.g. export const plugins = [new LoggingPlugin()])`,
      { details: { field: 'plugins', path: file } },
    );
  }
  return {
    ...(plugins === undefined ? {} : { plugins: plugins as unknown[] }),
    apps: apps as AppDefinition[],
    tools: tools as Record<string, Tool>,
    models: models as Record<string, Model>,
    ...(rateLimits === undefined
      ? {}
      : { rateLimits: validateRateLimits(rateLimits, 'rateLimits (apps module)') }),
  };
}

/**
 * The `tools` and `models` a module exports (an apps module, or one exporting only those), for checking the names
 * a declarative file uses (`agentloom validate --registry MODULE`). A missing export is an empty record.
 */
export async function loadRegistries(path: string): Promise<Required<Registries>> {
  const file = resolve(path);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new AgentloomError(
      'CONFIG',
      `registry module ${file} does not exist: pass a .js or .ts module exporting \`tools\` and/or \`models\``,
      {
        details: { field: 'registry', path: file },
      },
    );
  }
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(pathToFileURL(file).href, TS.test(file));
  } catch (err) {
    throw new AgentloomError('CONFIG', `registry module ${file} failed to load: ${(err as Error).message}`, {
      details: { field: 'registry', path: file },
      cause: err,
    });
  }
  const exports = isRecord(mod.default) && !('tools' in mod) && !('models' in mod) ? mod.default : mod;
  const { tools = {}, models = {} } = exports;
  if (!isRecord(tools) || !isRecord(models)) {
    throw new AgentloomError(
      'CONFIG',
      `registry module ${file}: \`tools\` and \`models\` must be objects mapping names to tools and models`,
      {
        details: { field: 'registry', path: file },
      },
    );
  }
  return { tools: tools as Record<string, Tool>, models: models as Record<string, Model> };
}
