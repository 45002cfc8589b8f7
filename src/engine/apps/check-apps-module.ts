/**
 * Checking a JS or TS apps module without running anything (`agentloom validate app.ts`): it is loaded by the loader
 * `dev` / `worker --apps PATH` use ({@link loadAppsModule}: its `apps`, `tools`, `models`, `rateLimits` and
 * `plugins` exports, the plugins checked as the engine registers them),
 * its apps registered as an engine registers them (names, agent trees, budgets, definition hashes, the auth its tools
 * declare), and the tool and model names its agents use checked against what that engine would have: the module's
 * `tools` and `models` (plus a `--registry` module's), the built-in tools and provider model ids. A name an engine
 * would only find missing when the agent first runs is a problem here.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { LlmAgent } from '../../agents/llm/llm-agent.js';
import { BUILT_IN_TOOLS, isProviderModelId, type Registries } from '../../config/apps/shared/registries.js';
import { closest } from '../../config/apps/shared/yaml-source.js';
import { AgentloomError } from '../../core/errors.js';
import { PluginManager } from '../../plugins/plugin-manager.js';
import { loadAppsModule, type AppsModule } from './apps-module.js';
import {
  checkDeclaredAuths,
  declaredAuths,
  registerApps,
  type AppDefinition,
  type RegisteredApp,
} from './registry.js';

/** What checking an apps module found. */
export interface AppsModuleCheck {
  /** The apps as an engine registers them (those that register). */
  apps: RegisteredApp[];
  /** Every problem, one line each, naming the app and agent (or the export) concerned. */
  problems: string[];
}

/** Whether `path` names a JS or TS module (what `--apps` loads as code rather than as YAML). */
export function isAppsModulePath(path: string): boolean {
  return /\.(c|m)?(j|t)sx?$/.test(path);
}

/**
 * Loads the apps module at `path` and checks it (see the file's comment); `registries`: names registered besides
 * the module's own (`validate --registry MODULE`).
 * @throws AgentloomError `CONFIG` when `path` is no file (bad usage, not a bad module).
 */
export async function checkAppsModule(path: string, registries: Registries = {}): Promise<AppsModuleCheck> {
  const file = resolve(path);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new AgentloomError(
      'CONFIG',
      `${path} does not exist: pass a .js or .ts module exporting \`apps\`, a .yaml file or a folder of them`,
      { details: { field: 'path', path: file } },
    );
  }
  let loaded: AppsModule;
  try {
    loaded = await loadAppsModule(file);
  } catch (err) {
    // It fails to import, or an export is not what `dev --apps` takes: the loader's message says which and how.
    if (!(err instanceof AgentloomError)) throw err;
    return { apps: [], problems: [err.message] };
  }
  const problems: string[] = [];
  // Each app on its own, so that one bad app does not hide the problems of the others.
  const valid: AppDefinition[] = [];
  loaded.apps.forEach((app, i) => {
    const label = typeof app?.name === 'string' ? `apps[${i}] "${app.name}"` : `apps[${i}]`;
    try {
      registerApps([...valid.filter((v) => v.name === app?.name), app]);
      valid.push(app);
    } catch (err) {
      if (!(err instanceof AgentloomError)) throw err;
      problems.push(`${label}: ${err.message}`);
    }
  });
  const apps = [...registerApps(valid).values()];
  try {
    checkDeclaredAuths(declaredAuths(apps, Object.values({ ...loaded.tools, ...registries.tools })), apps);
  } catch (err) {
    if (!(err instanceof AgentloomError)) throw err;
    problems.push(err.message);
  }
  const names = {
    tools: { ...loaded.tools, ...registries.tools },
    models: { ...loaded.models, ...registries.models },
  };
  for (const app of apps) problems.push(...nameProblems(app, names));
  // The `plugins` export as the engine registers it: a name twice, a method that looks like a misspelt callback.
  try {
    new PluginManager(loaded.plugins ?? []);
  } catch (err) {
    if (!(err instanceof AgentloomError)) throw err;
    problems.push(err.message);
  }
  if (loaded.apps.length === 0) problems.push('`apps` is empty: export at least one { name, agent }');
  return { apps, problems };
}

/** The tool and model names the LLM agents of `app` use that an engine given `names` would not resolve. */
function nameProblems(app: RegisteredApp, names: Required<Registries>): string[] {
  const problems: string[] = [];
  const tools = [...BUILT_IN_TOOLS, ...Object.keys(names.tools)];
  const models = Object.keys(names.models);
  for (const agent of app.agents.values()) {
    if (!(agent instanceof LlmAgent)) continue;
    const at = `app "${app.name}", agent "${agent.name}"`;
    const model = agent.options.model;
    if (model === undefined && !models.includes('default')) {
      problems.push(
        `${at}: names no model and the module's \`models\` export has no "default": give it a model (an instance, a provider id such as gemini-2.5-flash, or a name in \`models\`)`,
      );
    } else if (typeof model === 'string' && !isProviderModelId(model) && !models.includes(model)) {
      problems.push(
        `${at}: model "${model}" is neither a provider id (such as gemini-2.5-flash or openai/gpt-4.1) nor exported in the module's \`models\` (${known(models)});${nearest(model, models) || ' export it there, or name a provider id'}`,
      );
    }
    for (const tool of agent.options.tools ?? []) {
      if (typeof tool !== 'string' || tools.includes(tool)) continue;
      problems.push(
        `${at}: tool "${tool}" is neither built in nor exported in the module's \`tools\` (${known(tools)});${nearest(tool, tools) || ' export it there, or give the agent the tool itself'}`,
      );
    }
  }
  return problems;
}

function known(names: readonly string[]): string {
  return names.length === 0 ? 'it exports none' : `known: ${names.join(', ')}`;
}

/** ` did you mean "x"?` when a known name is close, else ''. */
function nearest(name: string, names: readonly string[]): string {
  const near = closest(name, names);
  return near ? ` did you mean "${near}"?` : '';
}
