/**
 * The engine observer's adapters (what `createEngine({ observer })` wraps around registered models, registered
 * tools and the step handler) and the Prometheus metrics they feed: each reports what happened with its timing
 * and passes results and errors through unchanged; a suspended tool call is not reported; a throwing observer
 * never fails the call; StepMetrics turns the reports into the counters a worker's `/metrics` serves.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  FunctionTool,
  ScriptedModel,
  type Model,
  type ModelRequest,
  type ToolContext,
} from '../../src/index.js';
import {
  observeModel,
  observeModels,
  observeSteps,
  observeTool,
  type EngineObserver,
  type ModelCallEnd,
  type StepEnd,
  type ToolCallEnd,
} from '../../src/engine/observe/observer.js';
import { StepMetrics } from '../../src/workers/step-metrics.js';

const logger = pino({ level: 'silent' });

function recorder() {
  const seen = { steps: [] as StepEnd[], models: [] as ModelCallEnd[], tools: [] as ToolCallEnd[] };
  const observer: EngineObserver = {
    onStepEnd: (s) => seen.steps.push(s),
    onModelCall: (c) => seen.models.push(c),
    onToolCall: (c) => seen.tools.push(c),
  };
  return { seen, observer };
}

const request = (agentName: string): ModelRequest => ({
  systemInstruction: '',
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  tools: [],
  agentName,
  callIndex: 0,
  state: {},
});

const toolContext = (agentName: string) => ({ agentName }) as unknown as ToolContext;

describe('engine observer adapters', () => {
  it('reports model calls with outcome, latency and tokens, passing answers and errors through', async () => {
    const { seen, observer } = recorder();
    let fail = false;
    const inner: Model = {
      name: 'm1',
      async generate() {
        if (fail) throw new Error('provider down');
        return {
          content: { role: 'model', parts: [{ text: 'ok' }] },
          usage: { promptTokens: 5, outputTokens: 2 },
        };
      },
    };
    const model = observeModel(inner, observer, logger);
    expect((await model.generate(request('writer'))).content.parts[0]).toEqual({ text: 'ok' });
    fail = true;
    await expect(model.generate(request('writer'))).rejects.toThrow('provider down');
    expect(seen.models).toMatchObject([
      {
        model: 'm1',
        provider: 'unknown',
        agent: 'writer',
        outcome: 'ok',
        usage: { promptTokens: 5, outputTokens: 2 },
      },
      { model: 'm1', provider: 'unknown', agent: 'writer', outcome: 'error' },
    ]);
    expect(seen.models[0]?.durationMs).toBeGreaterThanOrEqual(0);
    // Nothing observes: the registry is handed over untouched.
    const models = new Map([['m1', inner]]);
    expect(observeModels(models, undefined, logger)).toBe(models);
    expect(observeModels(models, { onStepEnd: () => undefined }, logger)).toBe(models);
  });

  it('reports tool runs, but not a run suspended until a child agent ends', async () => {
    const { seen, observer } = recorder();
    const tool = new FunctionTool({
      name: 'lookup',
      description: 'Looks up.',
      parameters: z.object({ q: z.string() }),
      execute: async ({ q }) => {
        if (q === 'boom') throw new Error('boom');
        if (q === 'wait') throw Object.assign(new Error('suspended'), { suspend: true });
        return { found: q };
      },
    });
    const observed = observeTool(tool, observer, logger);
    expect(observed.declaration()).toEqual(tool.declaration());
    expect([observed.name, observed.isLongRunning, observed.sideEffects]).toEqual([
      'lookup',
      false,
      'idempotent',
    ]);
    expect(await observed.run({ q: 'a' }, toolContext('helper'))).toEqual({ found: 'a' });
    await expect(observed.run({ q: 'boom' }, toolContext('helper'))).rejects.toThrow('boom');
    await expect(observed.run({ q: 'wait' }, toolContext('helper'))).rejects.toThrow('suspended');
    expect(seen.tools.map((t) => [t.tool, t.agent, t.outcome])).toEqual([
      ['lookup', 'helper', 'ok'],
      ['lookup', 'helper', 'error'],
    ]);
  });

  it('reports step jobs, rethrows what the queue must redeliver, and survives a throwing observer', async () => {
    const { seen, observer } = recorder();
    const handle = observeSteps(
      async (job) => {
        if (job.path === 'bad') throw new Error('database gone');
      },
      observer,
      logger,
    );
    await handle({ invocationId: 'inv_1', path: 'root', wake: 1 });
    await expect(handle({ invocationId: 'inv_1', path: 'bad', wake: 1, redelivery: 2 })).rejects.toThrow(
      'database gone',
    );
    expect(seen.steps).toMatchObject([
      { invocationId: 'inv_1', path: 'root', outcome: 'ok', redelivery: 0 },
      { invocationId: 'inv_1', path: 'bad', outcome: 'error', redelivery: 2 },
    ]);
    const throwing = observeModel(
      new ScriptedModel({ respond: () => 'fine' }),
      {
        onModelCall: () => {
          throw new Error('observer bug');
        },
      },
      logger,
    );
    expect((await throwing.generate(request('a'))).content.parts[0]).toEqual({ text: 'fine' });
  });
});

describe('StepMetrics', () => {
  it('counts what the observer reports into Prometheus series', async () => {
    const metrics = new StepMetrics({ processMetrics: false });
    const { observer } = metrics;
    observer.onStepEnd?.({
      invocationId: 'i',
      path: 'p',
      outcome: 'ok',
      durationMs: 12,
      redelivery: 0,
      queueWaitMs: 30,
    });
    observer.onStepEnd?.({ invocationId: 'i', path: 'p', outcome: 'error', durationMs: 3, redelivery: 0 });
    const step = { invocationId: 'i', path: 'p', agent: 'a', attempt: 1 };
    observer.onStep?.({ ...step, outcome: 'completed', durationMs: 8 });
    observer.onStep?.({ ...step, outcome: 'superseded', durationMs: 2 });
    observer.onModelCall?.({
      model: 'm1',
      provider: 'OpenAI',
      agent: 'a',
      outcome: 'ok',
      durationMs: 250,
      usage: { promptTokens: 11, outputTokens: 4, cachedTokens: 3 },
    });
    observer.onToolCall?.({ tool: 't1', agent: 'a', outcome: 'error', durationMs: 40 });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^agentloom_step_jobs_total\{outcome="ok"\} 1$/m);
    expect(text).toMatch(/^agentloom_step_jobs_total\{outcome="error"\} 1$/m);
    expect(text).toMatch(/^agentloom_step_retries_total 1$/m);
    expect(text).toMatch(/^agentloom_step_job_duration_seconds_sum\{outcome="ok"\} 0\.012$/m);
    expect(text).toMatch(/^agentloom_step_queue_wait_seconds_sum 0\.03$/m);
    expect(text).toMatch(/^agentloom_step_queue_wait_seconds_count 1$/m);
    expect(text).toMatch(/^agentloom_steps_total\{outcome="completed"\} 1$/m);
    expect(text).toMatch(/^agentloom_steps_total\{outcome="superseded"\} 1$/m);
    expect(text).toMatch(/^agentloom_steps_total\{outcome="failed"\} 0$/m);
    expect(text).toMatch(/^agentloom_step_duration_seconds_sum\{outcome="completed"\} 0\.008$/m);
    expect(text).toMatch(/^agentloom_model_calls_total\{provider="OpenAI",model="m1",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^agentloom_model_tokens_total\{provider="OpenAI",model="m1",kind="prompt"\} 11$/m);
    expect(text).toMatch(/^agentloom_model_tokens_total\{provider="OpenAI",model="m1",kind="output"\} 4$/m);
    expect(text).toMatch(/^agentloom_model_tokens_total\{provider="OpenAI",model="m1",kind="cached"\} 3$/m);
    expect(text).toMatch(
      /^agentloom_model_call_duration_seconds_bucket\{le="0\.25",provider="OpenAI",model="m1",outcome="ok"\} 1$/m,
    );
    expect(text).toMatch(/^agentloom_tool_calls_total\{tool="t1",outcome="error"\} 1$/m);
  });
});
