/**
 * Names a declarative file may use for tools and models, checked against the same `tools` / `models` records
 * `createEngine` takes. The built agents keep the names: the engine resolves them at run time from its records,
 * exactly as for a code tree that names its tools and models.
 */
import type { BaseAgent } from '../agents/base-agent.js';
import type { Model } from '../models/model.js';
import { exitLoop } from '../tools/exit-loop.js';
import type { Tool } from '../tools/tool.js';
import { suggest } from './yaml-source.js';

/**
 * The tools and models a declarative file may name. A record that is absent is not checked: its names are left
 * for the engine to resolve when the agent runs (what `createEngine({ apps: 'path' })` does today).
 */
export interface Registries {
  tools?: Record<string, Tool>;
  models?: Record<string, Model>;
}

/** An app built from a declarative file: the shape of the engine's AppDefinition (`{ name, agent }`). */
export interface DeclarativeApp {
  name: string;
  agent: BaseAgent;
}

/** Built-in tools every file may name. */
export const BUILT_IN_TOOLS: readonly string[] = [exitLoop.name];

/** Gemini model ids resolve at run time (the engine builds the client with its API key). */
const GEMINI_ID = /^gemini-/;

/** Why `name` cannot be used as a tool, or undefined when it can. */
export function toolProblem(name: string, registries: Registries): string | undefined {
  if (
    BUILT_IN_TOOLS.includes(name) ||
    registries.tools === undefined ||
    Object.hasOwn(registries.tools, name)
  )
    return undefined;
  const known = [...BUILT_IN_TOOLS, ...Object.keys(registries.tools)];
  return `tool "${name}" is not registered; ${suggest(name, known, 'one of')} (or register it in code: createEngine({ tools: { ${name}: … } }))`;
}

/**
 * Why `name` (undefined: the model registered as "default") cannot be used as a model, or undefined. `key` is the
 * YAML key the message tells the author to write (`model`, or kagent's `modelConfig`).
 */
export function modelProblem(
  name: string | undefined,
  registries: Registries,
  key = 'model',
): string | undefined {
  if (registries.models === undefined) return undefined;
  const known = Object.keys(registries.models);
  const choices = `a registered model (${known.join(', ') || 'none registered'}) or a Gemini id such as gemini-2.5-flash`;
  if (name === undefined) {
    return Object.hasOwn(registries.models, 'default')
      ? undefined
      : `no model given and none is registered as "default"; write ${key}: <${choices}>`;
  }
  if (GEMINI_ID.test(name) || Object.hasOwn(registries.models, name)) return undefined;
  const near = suggest(name, known, 'one of');
  return `model "${name}" is not registered; ${near.startsWith('did') ? `${near} ` : ''}write ${choices}`;
}
