/**
 * A step's model and tool references resolved to the live instances (a replay answers from the recording
 * instead): an instance the agent holds, observed; a name, looked up among those registered (a provider id such as
 * `openai/gpt-4.1` builds its model). An unknown name is a CONFIG error saying where to register it.
 */
import { AgentloomError } from '../../../core/errors.js';
import type { Model } from '../../../models/model.js';
import { exitLoop } from '../../../tools/exit-loop.js';
import type { Tool } from '../../../tools/tool.js';

/** What resolving needs of the step's dependencies. */
export interface LiveRefs {
  models: ReadonlyMap<string, Model>;
  defaultModel: (name: string) => Model | undefined;
  tools: ReadonlyMap<string, Tool>;
  /** Wraps a model instance an agent holds (not one registered by name) so its calls are observed. */
  observeModel?: (model: Model) => Model;
  /** Wraps a tool instance an agent holds (not one registered by name) so its calls are observed. */
  observeTool?: (tool: Tool) => Tool;
}

/** The model `ref` names (the registered `default` when undefined). */
export function liveModel(deps: LiveRefs, ref: Model | string | undefined): Model {
  if (ref !== undefined && typeof ref !== 'string') return deps.observeModel?.(ref) ?? ref;
  const name = ref ?? 'default';
  const model = deps.models.get(name) ?? deps.defaultModel(name);
  if (!model) {
    throw new AgentloomError(
      'CONFIG',
      `model "${name}" is not registered: pass it in createEngine({ models: { "${name}": … } }) or name it by a provider id such as openai/gpt-4.1 or gemini-2.5-flash`,
      { details: { model: name } },
    );
  }
  return model;
}

/** The tool `ref` names (`exit_loop` is built in). */
export function liveTool(deps: LiveRefs, ref: Tool | string): Tool {
  if (typeof ref !== 'string') return deps.observeTool?.(ref) ?? ref;
  const tool = ref === exitLoop.name ? (deps.observeTool?.(exitLoop) ?? exitLoop) : deps.tools.get(ref);
  if (!tool) {
    throw new AgentloomError(
      'CONFIG',
      `tool "${ref}" is not registered: pass it in createEngine({ tools: { "${ref}": … } })`,
      { details: { tool: ref } },
    );
  }
  return tool;
}
