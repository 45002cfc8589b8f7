/**
 * Names a declarative file may use for tools and models: what the engine that loads it would have — the built-in
 * tools, provider model ids (`gemini-…`, `openai/…`, …), the `tools` / `models` records given to `createEngine` (or exported by the module
 * `validate --registry` names), and what the files declare themselves (kagent ModelConfig manifests, see
 * kagent-model-configs.ts). `validate` and the loader check through these same functions, so a file that passes
 * one loads in the other. The built agents keep the names: the engine resolves them at run time from its records,
 * exactly as for a code tree that names its tools and models.
 */
import type { Budget } from '../../../models/budget/budget.js';
import type { BaseAgent } from '../../../agents/base-agent.js';
import type { Model } from '../../../models/model.js';
import { parseModelId } from '../../../models/model-ids.js';
import { exitLoop } from '../../../tools/exit-loop.js';
import type { Tool } from '../../../tools/tool.js';
import { closest } from './yaml-source.js';

/**
 * The tools and models registered in code that a declarative file may name, besides the built-in tools and provider
 * model ids. An absent record is an empty one: `createEngine({ apps: 'path' })` without `tools` serves only the built-in
 * tools, so a file naming another fails when loaded, not when its agent first runs.
 */
export interface Registries {
  tools?: Record<string, Tool>;
  models?: Record<string, Model>;
}

/** An app built from a declarative file: the shape of the engine's AppDefinition (`{ name, agent }`). */
export interface DeclarativeApp {
  name: string;
  agent: BaseAgent;
  /** kagent manifests: the root Agent's `metadata.namespace`. */
  namespace?: string;
  /** The budget of every run of the app (native YAML `budget:`). */
  budget?: Budget;
}

/** Built-in tools every file may name. */
export const BUILT_IN_TOOLS: readonly string[] = [exitLoop.name];

/**
 * Whether `name` is a provider model id (`gemini-2.5-flash`, `openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`,
 * `ollama/llama3.2`, `azure/<deployment>`): every engine resolves those, with the keys of its environment.
 */
export function isProviderModelId(name: string): boolean {
  return parseModelId(name) !== undefined;
}

/** Whether `name` is a Gemini model id (`gemini-2.5-flash`). */
export function isGeminiId(name: string): boolean {
  return parseModelId(name)?.provider === 'gemini';
}

/** How messages name the provider ids. */
const PROVIDER_IDS =
  'provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2';

/** How many known names a message lists before `…`. */
const LISTED = 12;

function listed(names: readonly string[]): string {
  return names.length > LISTED ? `${names.slice(0, LISTED).join(', ')}, …` : names.join(', ');
}

/** ` did you mean "x"?` when a known name is close, else ''. */
function nearest(name: string, known: readonly string[]): string {
  const near = closest(name, known);
  return near ? ` did you mean "${near}"?` : '';
}

/** The tool object `name` stands for (a built-in or a registered one), if any. */
export function registeredTool(name: string, registries: Registries): Tool | undefined {
  if (Object.hasOwn(registries.tools ?? {}, name)) return registries.tools?.[name];
  return name === exitLoop.name ? exitLoop : undefined;
}

/** Why `name` cannot be used as a tool, or undefined when it can. */
export function toolProblem(name: string, registries: Registries): string | undefined {
  const registered = Object.keys(registries.tools ?? {});
  if (BUILT_IN_TOOLS.includes(name) || registered.includes(name)) return undefined;
  const known = [...BUILT_IN_TOOLS, ...registered];
  const hint = nearest(name, known);
  return `unknown tool "${name}" (known: ${listed(known)});${hint || ` register it in code, createEngine({ tools: { ${name}: … } }), and name that module with validate --registry`}`;
}

/**
 * Why `name` (undefined: the model registered as "default") cannot be used as a model, or undefined. `key` is the
 * YAML key the message tells the author to write (`model`, or kagent's `modelConfig`); `declared` are the names
 * the files declare themselves (kagent ModelConfigs), known besides the registered ones.
 */
export function modelProblem(
  name: string | undefined,
  registries: Registries,
  key = 'model',
  declared: readonly string[] = [],
): string | undefined {
  const known = [...Object.keys(registries.models ?? {}), ...declared];
  const choices = `${known.length > 0 ? `${listed(known)}, ` : ''}${PROVIDER_IDS}`;
  if (name === undefined) {
    const write = known.length > 0 ? `one of ${listed(known)}, or a provider id` : 'a provider id';
    return known.includes('default')
      ? undefined
      : `no model given and none is registered as "default"; write ${key}: <${write} such as gemini-2.5-flash or openai/gpt-4.1>`;
  }
  if (isProviderModelId(name) || known.includes(name)) return undefined;
  const hint = nearest(name, known);
  return `unknown model "${name}" (known: ${choices});${hint || ` write ${key}: <a provider id>, or register a model "${name}" in code and name that module with validate --registry`}`;
}
