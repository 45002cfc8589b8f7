/**
 * Tracing in one process (an engine on PostgreSQL, in-process queue, an SDK registered first, spans kept in
 * memory): a failure is recorded on its spans with the API's error code; a step's log lines carry its trace and span
 * ids; a cancelled run still gets its node spans; a "stop" answer refused (the run's definition changed) exports no
 * `cancelled` span, since a run's end is traced after its commit; only a node's own span is an agent invocation
 * (`invoke_agent`), not its steps; an engine made before any SDK was registered traces nothing.
 */
import { trace } from '@opentelemetry/api';
import {
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentloomError,
  AgentloomIdGenerator,
  FunctionTool,
  LlmAgent,
  RunSampler,
  ScriptedModel,
  SequentialAgent,
  type AppDefinition,
  type Engine,
} from '../../src/index.js';
import { traceLogFields } from '../../src/engine/observe/run-trace.js';
import { backends, engineOn } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
const exporter = new InMemorySpanExporter();
const lines: Record<string, unknown>[] = [];
const logger = pino(
  { level: 'debug', mixin: traceLogFields },
  { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
);

const publish = new FunctionTool({
  name: 'publish',
  description: 'Publishes (needs confirmation).',
  requireConfirmation: true,
  execute: async () => ({ ok: true }),
});

const apps: AppDefinition[] = [
  {
    name: 'broken',
    agent: new SequentialAgent({
      name: 'broken_flow',
      subAgents: [
        new LlmAgent({
          name: 'breaker',
          model: new ScriptedModel({
            respond: () => {
              throw new AgentloomError('MODEL_ERROR', 'the provider refused the request');
            },
          }),
        }),
      ],
    }),
  },
  {
    name: 'pipeline',
    agent: new SequentialAgent({
      name: 'pipeline_flow',
      subAgents: ['drafter', 'reviewer'].map(
        (name) => new LlmAgent({ name, model: new ScriptedModel({ respond: () => `${name} done` }) }),
      ),
    }),
  },
  {
    name: 'confirm',
    agent: new LlmAgent({
      name: 'approver',
      tools: [publish],
      model: new ScriptedModel({
        respond: (turn) =>
          turn.callIndex === 0 ? { functionCalls: [{ name: 'publish', args: {} }] } : 'done',
      }),
    }),
  },
];

const step = new FunctionTool({
  name: 'step',
  description: 'One step.',
  execute: async () => ({ ok: true }),
});
apps.push({
  name: 'metered',
  agent: new LlmAgent({
    name: 'meter',
    tools: [step],
    model: new ScriptedModel({
      respond: (turn) => (turn.callIndex === 0 ? { functionCalls: [{ name: 'step', args: {} }] } : 'done'),
    }),
  }),
});

let untraced: Engine;
let engine: Engine;
let provider: NodeTracerProvider;

beforeAll(async () => {
  untraced = await engineOn(postgres, { apps, logger: pino({ level: 'silent' }) });
  const root = new AlwaysOnSampler();
  provider = new NodeTracerProvider({
    idGenerator: new AgentloomIdGenerator(),
    sampler: new RunSampler(new ParentBasedSampler({ root }), root),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  engine = await engineOn(postgres, { apps, logger });
});

afterAll(async () => {
  await engine.close();
  await untraced.close();
  await provider.shutdown();
  trace.disable();
});

const spansOf = (traceId: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const named = (traceId: string, name: string): ReadableSpan[] =>
  spansOf(traceId).filter((s) => s.name === name);
/** The spans of a run's end: exported after the commit that ended it, so possibly just after `wait` resolves. */
const ended = (traceId: string, name: string): Promise<ReadableSpan[]> =>
  waitFor(() => (named(traceId, name).length > 0 ? named(traceId, name) : undefined), { what: name });

describe('tracing in one process', () => {
  it("records a failure with the API's error code on the model, step, node and root spans", async () => {
    const { invocationId } = await engine.enqueue({ app: 'broken', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(done.status).toBe('failed');
    const code = done.error?.code;
    expect(code).toBe('MODEL_ERROR');
    for (const name of [
      'chat scripted',
      'step breaker',
      'invoke_agent breaker',
      'invoke_agent broken_flow',
    ]) {
      const [span] = await ended(done.traceId, name);
      expect(span?.status, name).toMatchObject({ code: 2 });
      expect(span?.attributes['error.type'], name).toBe(code);
      expect(span?.events.find((e) => e.name === 'exception')?.attributes?.['exception.type'], name).toBe(
        code,
      );
    }
  });

  it('counts one agent invocation per node: its invoke_agent span, never its step spans', async () => {
    const { invocationId } = await engine.enqueue({ app: 'pipeline', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(done.status).toBe('completed');
    await ended(done.traceId, 'invoke_agent pipeline_flow');
    const spans = spansOf(done.traceId);
    const steps = spans.filter((s) => s.name.startsWith('step '));
    expect(steps.map((s) => s.name).sort()).toEqual(['step drafter', 'step reviewer']);
    for (const step of steps) {
      expect(step.attributes['gen_ai.operation.name'], step.name).not.toBe('invoke_agent');
      expect(step.attributes['agentloom.node.path'], step.name).toBe(
        `pipeline_flow/${step.name.slice('step '.length)}`,
      );
      expect(step.attributes['agentloom.invocation.id'], step.name).toBe(invocationId);
    }
    const invocations = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent');
    expect(invocations.map((s) => s.name).sort()).toEqual([
      'invoke_agent drafter',
      'invoke_agent pipeline_flow',
      'invoke_agent reviewer',
    ]);
  });

  it("puts a step's trace and span ids on its log lines", async () => {
    const { invocationId } = await engine.enqueue({ app: 'broken', userId: 'u', input: 'again' });
    const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
    const [step] = named(done.traceId, 'step breaker');
    const claimed = lines.find((l) => l.msg === 'step claimed' && l.invocationId === invocationId);
    expect(claimed).toMatchObject({ trace_id: done.traceId, span_id: step?.spanContext().spanId });
  });

  it('emits the node spans of a cancelled run, and a pause as an event of its step', async () => {
    const { invocationId } = await engine.enqueue({ app: 'confirm', userId: 'u', input: 'go' });
    const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(paused.status).toBe('paused');
    expect(named(paused.traceId, 'invoke_agent approver')).toHaveLength(0);
    const [step] = named(paused.traceId, 'step approver');
    expect(step?.events.map((e) => [e.name, e.attributes?.['gen_ai.tool.name']])).toEqual([
      ['agentloom.pause', 'publish'],
    ]);
    await engine.cancel(invocationId);
    const [root] = await ended(paused.traceId, 'invoke_agent approver');
    expect(root?.attributes).toMatchObject({
      'agentloom.invocation.status': 'cancelled',
      'agentloom.node.status': 'cancelled',
    });
    expect(step?.parentSpanContext?.spanId).toBe(root?.spanContext().spanId);
  });

  it('exports no cancelled span for a "stop" answer that is refused (the run\'s definition changed)', async () => {
    const { invocationId } = await engine.enqueue({
      app: 'metered',
      userId: 'u',
      input: 'go',
      budget: { modelCalls: 1, onExceeded: 'pause' },
    });
    const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(paused.pending[0]?.kind).toBe('budget');
    // Another definition of the app started the run: this engine must refuse to answer it, rolling the answer back.
    await engine.store.db.execute(
      sql`update invocations set definition_hash = 'changed' where id = ${invocationId}`,
    );
    await expect(
      engine.respond({
        invocationId,
        functionResponses: [{ id: paused.pending[0]!.callId, response: { action: 'stop' } }],
      }),
    ).rejects.toMatchObject({ code: 'DEFINITION_MISMATCH' });
    expect((await engine.get(invocationId)).status).toBe('paused');
    // The engine's later work is traced and handled (a cancel of another run), yet this run's end never was.
    const other = await engine.enqueue({ app: 'confirm', userId: 'u', input: 'go' });
    const otherPaused = await engine.wait(other.invocationId, { timeoutMs: 30_000 });
    await engine.cancel(other.invocationId);
    await ended(otherPaused.traceId, 'invoke_agent approver');
    expect(named(paused.traceId, 'invoke_agent meter')).toEqual([]);
  });

  it('traces nothing in an engine made before an SDK was registered', async () => {
    const before = exporter.getFinishedSpans().length;
    const { invocationId } = await untraced.enqueue({ app: 'broken', userId: 'u', input: 'go' });
    const done = await untraced.wait(invocationId, { timeoutMs: 30_000 });
    expect(done.status).toBe('failed');
    expect(exporter.getFinishedSpans().length).toBe(before);
  });
});
