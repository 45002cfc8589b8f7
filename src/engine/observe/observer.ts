/**
 * Observing what an engine does (metrics, tracing): `createEngine({ observer })` is called back when a step job
 * ends, and when a model or a tool registered with the engine answers. Callbacks are synchronous and cheap by
 * contract (they run on the step's path); one that throws is logged and ignored, never failing a step.
 */
import type { Logger } from 'pino';
import { ChildPaused } from '../../agents/llm/tool-call.js';
import type { Model, ModelUsage } from '../../models/model.js';
import type { Spend } from '../../models/budget/budget.js';
import type { StepHandler } from '../../queue/step-queue.js';
import type { PruneCounts } from '../../store/repos/prune.js';
import { wrapTool, type Tool } from '../../tools/tool.js';

/**
 * How a step job ended: `ok` (handled: the step ran, or found nothing to do) or `error` (it failed in a way the
 * queue delivers again: the database went away, the process hit a fault; SEMANTICS failures of the agent are
 * `ok`, stored as the node's outcome).
 */
export type StepOutcome = 'ok' | 'error';

/** One step job, as the engine's worker loop saw it. */
export interface StepEnd {
  invocationId: string;
  /** The node path (`root/child/…`). */
  path: string;
  outcome: StepOutcome;
  /** Wall time of the handler, ms. */
  durationMs: number;
  /** How many times the engine re-sent this wake-up before (0 on a first delivery). */
  redelivery: number;
  /** From the job becoming due to its handler starting, ms (when the queue reports it). */
  queueWaitMs?: number;
}

/**
 * How one claimed step of a leaf ended: its outcome committed (`completed`, `failed`, `paused`, `waiting` on a child
 * agent), or nothing committed — `superseded` (another attempt took the node over), `released` (shutdown gave it
 * back), `rate_limited` (gave back its worker to wait for a model's rate limit), `stopped` (cancelled or ended
 * meanwhile). A job may run several steps (a sequence continued on this worker).
 */
export interface StepRun {
  invocationId: string;
  path: string;
  agent: string;
  attempt: number;
  outcome:
    'completed' | 'failed' | 'paused' | 'waiting' | 'superseded' | 'released' | 'rate_limited' | 'stopped';
  /** From the claim to the end of the commit, ms. */
  durationMs: number;
}

/** One model call. */
export interface ModelCallEnd {
  /** The model's name (`gemini-2.5-flash`, `gpt-4.1`, `scripted`). */
  model: string;
  /** Who serves it (`Model.provider`: 'OpenAI', 'Anthropic', 'Gemini', …; 'unknown' when the model says not). */
  provider: string;
  /** The agent that called it. */
  agent: string;
  outcome: 'ok' | 'error';
  durationMs: number;
  /** Tokens, when the provider reports them. */
  usage?: ModelUsage;
}

/** What one model call spent, as budgets count it (README "Budgets"). */
export interface SpendEnd {
  app: string;
  agent: string;
  /** The model id or registered name its price was looked up by. */
  model: string;
  spend: Spend;
}

/** One tool call (`Tool.run`, after any confirmation); a call suspended until a child agent ends is not one. */
export interface ToolCallEnd {
  tool: string;
  agent: string;
  /** `error` when `run` threw (the model is then told `{error}`, or an `onToolErrorCallback` answers). */
  outcome: 'ok' | 'error';
  durationMs: number;
}

/**
 * Callbacks of {@link EngineObserver}. Model and tool calls are observed for the models and tools given to the
 * engine by name (`createEngine({ models, tools })`, an apps module's `models` / `tools`, and Gemini models named
 * by id), which is how YAML apps and registries reference them.
 */
export interface EngineObserver {
  /** A step job ended (its handler returned or threw). */
  onStepEnd?(step: StepEnd): void;
  /** A claimed step of a leaf ended. */
  onStep?(step: StepRun): void;
  onModelCall?(call: ModelCallEnd): void;
  /** A model call's spend was counted (committed with its event): what budgets count. */
  onSpend?(spend: SpendEnd): void;
  onToolCall?(call: ToolCallEnd): void;
  /** Retention deleted a batch of ended runs (rows per table). */
  onPrune?(counts: PrunedRows): void;
}

/** Rows one retention batch deleted, per table. */
export type PrunedRows = PruneCounts;

/** Calls one observer callback; a throwing observer is logged at debug and otherwise ignored. */
export function notify<T>(callback: ((info: T) => void) | undefined, info: T, logger: Logger): void {
  if (!callback) return;
  try {
    callback(info);
  } catch (err) {
    logger.debug({ err }, 'engine observer failed');
  }
}

/** A step handler that reports each job's end to `observer` (the same handler when nothing observes steps). */
export function observeSteps(
  handle: StepHandler,
  observer: EngineObserver | undefined,
  logger: Logger,
): StepHandler {
  if (!observer?.onStepEnd) return handle;
  const onStepEnd = observer.onStepEnd.bind(observer);
  return async (job, delivery) => {
    const started = performance.now();
    const queueWaitMs = delivery ? Math.max(0, Date.now() - delivery.readyAt) : undefined;
    const end = (outcome: StepOutcome): void =>
      notify(
        onStepEnd,
        {
          invocationId: job.invocationId,
          path: job.path,
          outcome,
          durationMs: performance.now() - started,
          redelivery: job.redelivery ?? 0,
          ...(queueWaitMs === undefined ? {} : { queueWaitMs }),
        },
        logger,
      );
    try {
      await handle(job, delivery);
      end('ok');
    } catch (err) {
      end('error');
      throw err;
    }
  };
}

/** The registered models, each reporting its calls to `observer` (the same map when nothing observes them). */
export function observeModels(
  models: Map<string, Model>,
  observer: EngineObserver | undefined,
  logger: Logger,
): Map<string, Model> {
  if (!observer?.onModelCall) return models;
  return new Map([...models].map(([name, model]) => [name, observeModel(model, observer, logger)]));
}

/** The registered tools, each reporting its runs to `observer` (the same map when nothing observes them). */
export function observeTools(
  tools: Map<string, Tool>,
  observer: EngineObserver | undefined,
  logger: Logger,
): Map<string, Tool> {
  if (!observer?.onToolCall) return tools;
  return new Map([...tools].map(([name, tool]) => [name, observeTool(tool, observer, logger)]));
}

/** A model whose calls are reported to `observer` (the same model when nothing observes model calls). */
export function observeModel(model: Model, observer: EngineObserver | undefined, logger: Logger): Model {
  if (!observer?.onModelCall) return model;
  const onModelCall = observer.onModelCall.bind(observer);
  return {
    name: model.name,
    ...(model.provider !== undefined ? { provider: model.provider } : {}),
    async generate(request, options) {
      const started = performance.now();
      const end = (outcome: 'ok' | 'error', usage?: ModelUsage): void =>
        notify(
          onModelCall,
          {
            model: model.name,
            provider: model.provider ?? 'unknown',
            agent: request.agentName,
            outcome,
            durationMs: performance.now() - started,
            ...(usage ? { usage } : {}),
          },
          logger,
        );
      try {
        const response = await model.generate(request, options);
        end('ok', response.usage);
        return response;
      } catch (err) {
        end('error');
        throw err;
      }
    },
  };
}

/** A tool whose runs are reported to `observer` (the same tool when nothing observes tool calls). */
export function observeTool(tool: Tool, observer: EngineObserver | undefined, logger: Logger): Tool {
  if (!observer?.onToolCall) return tool;
  const onToolCall = observer.onToolCall.bind(observer);
  return wrapTool(tool, {
    async run(args, ctx) {
      const started = performance.now();
      const end = (outcome: 'ok' | 'error'): void =>
        notify(
          onToolCall,
          { tool: tool.name, agent: ctx.agentName, outcome, durationMs: performance.now() - started },
          logger,
        );
      try {
        const result = await tool.run(args, ctx);
        end('ok');
        return result;
      } catch (err) {
        // Suspended until a child agent ends (AgentTool): not an end; the call reports when it runs again.
        if (!isSuspension(err)) end('error');
        throw err;
      }
    },
  });
}

/** A call suspended until a child agent ends (AgentTool): no end, no failure. */
export function isSuspension(err: unknown): boolean {
  if (err instanceof ChildPaused) return true;
  return typeof err === 'object' && err !== null && (err as { suspend?: unknown }).suspend === true;
}
