/**
 * The scheduler's dependencies from an engine's resolved parts and options: models and tools wrapped for the
 * observer, provider models made on demand for provider ids (`openai/…`, `gemini-…`), fault points, partial events. Called by the Engine.
 */
import type { Event } from '../core/event.js';
import { createModelForId } from '../models/providers/model-factory.js';
import { parseModelId } from '../models/model-ids.js';
import type { Model } from '../models/model.js';
import type { Tool } from '../tools/tool.js';
import type { EngineOptions, EngineParts } from './engine-options.js';
import { traceModel, traceTool } from './observe/call-trace.js';
import { notify, observeModel, observeTool, type SpendEnd, type StepRun } from './observe/observer.js';
import type { SchedulerDeps } from './step/env/step-env.js';
import type { RunHooks } from './observe/run-hooks.js';

/** What only the engine knows: this worker's identity and lease, and where partial events and ends go. */
export interface EngineHooks {
  owner: string;
  leaseMs: number;
  publishPartial: (event: Event) => void;
  onInvocationEnded: (invocationId: string) => void;
  /** The after-commit hooks and the plugins the steps run. */
  runHooks: RunHooks;
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
  const { tracing } = parts;
  // A model or tool is traced first, then observed: its observer callbacks run inside its span.
  const wrapModel = (m: Model): Model =>
    observeModel(tracing ? traceModel(m, tracing.tracer, tracing.captureContent) : m, observer, logger);
  const wrapTool = (t: Tool): Tool =>
    observeTool(tracing ? traceTool(t, tracing.tracer, tracing.captureContent) : t, observer, logger);
  const wrapsModels = tracing !== undefined || observer?.onModelCall !== undefined;
  const wrapsTools = tracing !== undefined || observer?.onToolCall !== undefined;
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
    models: wrapsModels ? mapValues(parts.models, wrapModel) : parts.models,
    tools: wrapsTools ? mapValues(parts.tools, wrapTool) : parts.tools,
    ...(tracing ? { tracing } : {}),
    ...(parts.rateLimiter ? { rateLimiter: parts.rateLimiter.limiter } : {}),
    // A provider id no app names at start (an agent given its model later): built on first use. An id whose
    // key is missing throws CONFIG naming the variable; a name that is no provider id is unknown (undefined).
    defaultModel: (name) => {
      if (!parseModelId(name)) return undefined;
      let model = providerCache.get(name);
      if (!model) {
        model = wrapModel(createModelForId(name, parts.modelEnv));
        providerCache.set(name, model);
      }
      return model;
    },
    fault: async (point, info) => {
      await options.faults?.(point, info);
    },
    partials: hooks.publishPartial,
    ...(options.prices ? { prices: options.prices } : {}),
    ...(options.budgetOutputReservation === undefined
      ? {}
      : { outputReservation: options.budgetOutputReservation }),
    ...(observer?.onSpend
      ? { onSpend: (spend: SpendEnd) => notify(observer.onSpend?.bind(observer), spend, logger) }
      : {}),
    onInvocationEnded: hooks.onInvocationEnded,
    runHooks: hooks.runHooks,
    ...(wrapsModels ? { observeModel: cachedPerInstance(wrapModel) } : {}),
    ...(wrapsTools ? { observeTool: cachedPerInstance(wrapTool) } : {}),
    ...(observer?.onStep
      ? { observeStep: (run: StepRun) => notify(observer.onStep?.bind(observer), run, logger) }
      : {}),
  };
}

/** The same map with each value wrapped. */
function mapValues<T>(map: Map<string, T>, wrap: (value: T) => T): Map<string, T> {
  return new Map([...map].map(([name, value]) => [name, wrap(value)]));
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
