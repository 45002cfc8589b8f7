/**
 * Prometheus metrics of the steps a process runs (ARCHITECTURE.md "Observability"): steps by outcome and their
 * duration, step jobs and their queue wait, retries, model call latency and tokens, tool call latency. Fed by the engine's observer
 * (`createEngine({ observer: metrics.observer })`); served by a worker's `--metrics-port`.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { EngineObserver } from '../engine/observe/observer.js';

/** Seconds; steps and calls range from a millisecond (a workflow node) to minutes (a slow model or tool). */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The `table` label of each count of a retention batch. */
const PRUNED_TABLES = {
  invocations: 'invocations',
  sessions: 'sessions',
  events: 'events',
  nodes: 'nodes',
  tool_requests: 'toolRequests',
  artifacts: 'artifacts',
} as const;

/** Options of {@link StepMetrics}. */
export interface StepMetricsOptions {
  /** Register into this registry (default: a registry of its own). */
  registry?: Registry;
  /** Include Node.js process metrics (CPU, memory, event loop lag), prefixed `agentloom_`. Default true. */
  processMetrics?: boolean;
}

/** Step, model and tool metrics in one registry, and the engine observer that feeds them. */
export class StepMetrics {
  readonly registry: Registry;
  readonly steps: Counter<'outcome'>;
  readonly stepDuration: Histogram<'outcome'>;
  readonly jobs: Counter<'outcome'>;
  readonly jobDuration: Histogram<'outcome'>;
  readonly queueWait: Histogram;
  readonly retries: Counter;
  readonly modelCalls: Counter<'model' | 'outcome'>;
  readonly modelDuration: Histogram<'model' | 'outcome'>;
  readonly modelTokens: Counter<'model' | 'kind'>;
  readonly spentTokens: Counter<'app' | 'agent'>;
  readonly spentCost: Counter<'app' | 'agent'>;
  readonly toolCalls: Counter<'tool' | 'outcome'>;
  readonly toolDuration: Histogram<'tool' | 'outcome'>;
  readonly prunedRows: Counter<'table'>;
  /** Pass to `createEngine({ observer })`. */
  readonly observer: EngineObserver;

  constructor(options: StepMetricsOptions = {}) {
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    this.steps = new Counter({
      name: 'agentloom_steps_total',
      help:
        'Leaf steps this process ran, by outcome: completed, failed, paused, waiting (on a child agent), ' +
        'superseded (another attempt took over), released (shutdown), rate_limited (gave back its worker to ' +
        'wait for a model rate limit), stopped (cancelled or ended)',
      labelNames: ['outcome'],
      registers,
    });
    this.stepDuration = new Histogram({
      name: 'agentloom_step_duration_seconds',
      help: 'Time of a leaf step from its claim to its commit (the agent run included), in seconds, by outcome',
      labelNames: ['outcome'],
      buckets: BUCKETS,
      registers,
    });
    this.jobs = new Counter({
      name: 'agentloom_step_jobs_total',
      help: 'Step jobs handled by this process, by outcome: ok (ran or had nothing to do), error (delivered again)',
      labelNames: ['outcome'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: 'agentloom_step_job_duration_seconds',
      help: 'Time to handle a step job (the steps it ran included), in seconds, by outcome',
      labelNames: ['outcome'],
      buckets: BUCKETS,
      registers,
    });
    this.queueWait = new Histogram({
      name: 'agentloom_step_queue_wait_seconds',
      help: 'Time a step job waited in the queue, from becoming due to its handler starting, in seconds',
      buckets: BUCKETS,
      registers,
    });
    this.retries = new Counter({
      name: 'agentloom_step_retries_total',
      help: 'Step jobs that failed in a way the queue retries (database unreachable, a crash point): each is run again',
      registers,
    });
    this.modelCalls = new Counter({
      name: 'agentloom_model_calls_total',
      help: 'Model calls made by this process, by provider, model and outcome (ok, error)',
      labelNames: ['provider', 'model', 'outcome'],
      registers,
    });
    this.modelDuration = new Histogram({
      name: 'agentloom_model_call_duration_seconds',
      help: 'Latency of a model call, in seconds, by provider, model and outcome',
      labelNames: ['provider', 'model', 'outcome'],
      buckets: BUCKETS,
      registers,
    });
    this.modelTokens = new Counter({
      name: 'agentloom_model_tokens_total',
      help: 'Tokens of model calls as the provider reports them, by provider, model and kind (prompt, output, cached: the part of prompt served from the provider’s cache)',
      labelNames: ['provider', 'model', 'kind'],
      registers,
    });
    this.spentTokens = new Counter({
      name: 'agentloom_spent_tokens_total',
      help: 'Tokens of model calls as budgets count them (committed with the call’s event), by app and agent',
      labelNames: ['app', 'agent'],
      registers,
    });
    this.spentCost = new Counter({
      name: 'agentloom_spent_cost_usd_total',
      help: 'Cost in USD of model calls at the price table, as budgets count it, by app and agent',
      labelNames: ['app', 'agent'],
      registers,
    });
    this.toolCalls = new Counter({
      name: 'agentloom_tool_calls_total',
      help: 'Tool calls run by this process, by tool and outcome (ok, error: the tool threw)',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.toolDuration = new Histogram({
      name: 'agentloom_tool_call_duration_seconds',
      help: 'Latency of a tool call, in seconds, by tool and outcome',
      labelNames: ['tool', 'outcome'],
      buckets: BUCKETS,
      registers,
    });
    this.prunedRows = new Counter({
      name: 'agentloom_pruned_rows_total',
      help: 'Rows deleted by retention (AGENTLOOM_RETENTION) in this process, by table',
      labelNames: ['table'],
      registers,
    });
    // Both step series exist from the start, so that rates and alerts see a 0 rather than no data.
    for (const outcome of ['ok', 'error']) this.jobs.inc({ outcome }, 0);
    for (const outcome of ['completed', 'failed', 'paused', 'waiting']) this.steps.inc({ outcome }, 0);
    for (const table of Object.keys(PRUNED_TABLES)) this.prunedRows.inc({ table }, 0);
    this.retries.inc(0);
    if (options.processMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry, prefix: 'agentloom_' });
    }
    this.observer = {
      onStepEnd: (job) => {
        this.jobs.inc({ outcome: job.outcome });
        this.jobDuration.observe({ outcome: job.outcome }, job.durationMs / 1000);
        if (job.queueWaitMs !== undefined) this.queueWait.observe(job.queueWaitMs / 1000);
        if (job.outcome === 'error') this.retries.inc();
      },
      onStep: (step) => {
        this.steps.inc({ outcome: step.outcome });
        this.stepDuration.observe({ outcome: step.outcome }, step.durationMs / 1000);
      },
      onModelCall: (call) => {
        const model = { provider: call.provider, model: call.model };
        const labels = { ...model, outcome: call.outcome };
        this.modelCalls.inc(labels);
        this.modelDuration.observe(labels, call.durationMs / 1000);
        const { promptTokens, outputTokens, cachedTokens } = call.usage ?? {};
        if (promptTokens) this.modelTokens.inc({ ...model, kind: 'prompt' }, promptTokens);
        if (outputTokens) this.modelTokens.inc({ ...model, kind: 'output' }, outputTokens);
        if (cachedTokens) this.modelTokens.inc({ ...model, kind: 'cached' }, cachedTokens);
      },
      onSpend: ({ app, agent, spend }) => {
        this.spentTokens.inc({ app, agent }, spend.tokens);
        this.spentCost.inc({ app, agent }, spend.costUsd);
      },
      onPrune: (counts) => {
        for (const [table, rows] of Object.entries(PRUNED_TABLES))
          this.prunedRows.inc({ table }, counts[rows]);
      },
      onToolCall: (call) => {
        const labels = { tool: call.tool, outcome: call.outcome };
        this.toolCalls.inc(labels);
        this.toolDuration.observe(labels, call.durationMs / 1000);
      },
    };
  }
}
