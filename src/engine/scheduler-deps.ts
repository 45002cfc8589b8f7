/**
 * The scheduler's dependencies from an engine's resolved parts and options: models and tools wrapped for the
 * observer, provider models made on demand for provider ids (`openai/…`, `gemini-…`), fault points, partial events. Called by the Engine.
 */
import type { Event } from '../core/event.js';
import { createModelForId } from '../models/model-factory.js';
import { parseModelId } from '../models/model-ids.js';
import type { Model } from '../models/model.js';
import type { Tool } from '../tools/tool.js';
import type { EngineOptions, EngineParts } from './engine-options.js';
import {
  notify,
  observeModel,
  observeModels,
  observeTool,
  observeTools,
  type StepRun,
} from './observe/observer.js';
import type { SchedulerDeps } from './step/step-env.js';

/** What only the engine knows: this worker's identity and lease, and where partial events and ends go. */
export interface EngineHooks {
  owner: string;
  leaseMs: number;
  publishPartial: (event: Event) => void;
  onInvocationEnded: (invocationId: string) => void;
}

/** The scheduler's dependencies (see {@link SchedulerDeps}). */
export function schedulerDeps(
  parts: EngineParts,
  options: Omit<EngineOptions, 'apps'>,
  hooks: EngineHooks,
): SchedulerDeps {
  const providerCache = new Map<string, Model>();
  const { logger } = parts;
  const { observer } = options;
  return {
    store: parts.store,
    vault: parts.vault,
    queue: parts.queue,
    apps: parts.apps,
    logger,
    owner: hooks.owner,
    leaseMs: hooks.leaseMs,
    maxStepMs: options.maxStepMs ?? 600_000,
    deferMs: options.deferMs ?? 5_000,
    models: observeModels(parts.models, observer, logger),
    tools: observeTools(parts.tools, observer, logger),
    // A provider id no app names at start (an agent given its model later): built on first use. An id whose
    // key is missing throws CONFIG naming the variable; a name that is no provider id is unknown (undefined).
    defaultModel: (name) => {
      if (!parseModelId(name)) return undefined;
      let model = providerCache.get(name);
      if (!model) {
        model = observeModel(createModelForId(name, parts.modelEnv), observer, logger);
        providerCache.set(name, model);
      }
      return model;
    },
    fault: async (point, info) => {
      await options.faults?.(point, info);
    },
    partials: hooks.publishPartial,
    onInvocationEnded: hooks.onInvocationEnded,
    ...(observer?.onModelCall
      ? { observeModel: cachedPerInstance((m: Model) => observeModel(m, observer, logger)) }
      : {}),
    ...(observer?.onToolCall
      ? { observeTool: cachedPerInstance((t: Tool) => observeTool(t, observer, logger)) }
      : {}),
    ...(observer?.onStep
      ? { observeStep: (run: StepRun) => notify(observer.onStep?.bind(observer), run, logger) }
      : {}),
  };
}

/** `wrap` applied once per instance: the same wrapper for the same model or tool every time. */
function cachedPerInstance<T extends object>(wrap: (value: T) => T): (value: T) => T {
  const wrapped = new WeakMap<T, T>();
  return (value) => {
    let result = wrapped.get(value);
    if (!result) {
      result = wrap(value);
      wrapped.set(value, result);
    }
    return result;
  };
}
