/**
 * One trace per run, whichever processes run it (README "Tracing"). Nothing is open across processes: every span
 * of a run is started with a parent that is named, not carried — the trace id is the caller's (stored with the
 * invocation) or derived from the invocation id, and a node's span id is derived from its path.
 *
 * - A step (one attempt of a leaf): `step {agent}`, started at the claim and ended at its commit, a child of its
 *   node's span; its model and tool calls are children of it. A worker killed mid-step loses its open span; the
 *   retry is another span (`agentloom.attempt` 2).
 * - A node: `invoke_agent {agent}`, one per node of the run (workflow agents and leaves), emitted when the run
 *   ends, from its row (created_at → updated_at), a child of its parent node's span (the root: of the caller's).
 *   A run paused for days and resumed elsewhere is still one tree.
 */
import {
  context,
  createContextKey,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { NodeSuspended, LeafOutcome } from '../../agents/context.js';
import { invocationTraceId, nodeSpanId, parseTraceparent } from '../../core/trace-context.js';
import type { Db } from '../../store/db/database.js';
import type { InvocationRow } from '../../store/repos/invocations.js';
import { invocationNodes, type NodeRow } from '../../store/repos/nodes.js';
import {
  agentInvocationAttributes,
  errorCodeOf,
  jsonAttribute,
  nodeAttributes,
  recordError,
} from './span-attributes.js';
import { startSpanWithIds } from './trace-ids.js';
import { DERIVED_TRACE } from './trace-sampler.js';
import type { StepHandler } from '../../queue/step-queue.js';
import type { StepRun } from './observer.js';

/** When the job that started a step became due (Date.now()), set on the context of its handler. */
const READY_AT_KEY = createContextKey('agentloom queue ready at');

/** The context a job's handler runs in: it carries when the job became due (the step's queue wait). */
export function jobContext(readyAt: number | undefined): Context {
  const active = context.active();
  return readyAt === undefined ? active : active.setValue(READY_AT_KEY, readyAt);
}

/** A step handler whose jobs run in a context carrying when they became due (see {@link RunTracing.step}). */
export function traceSteps(handle: StepHandler, tracing: RunTracing | undefined): StepHandler {
  if (!tracing) return handle;
  return (job, delivery) => context.with(jobContext(delivery?.readyAt), () => handle(job, delivery));
}

/**
 * Exports the spans the registered SDK still holds (a process's graceful stop, before it exits). Nothing when no SDK
 * is registered; a flush that fails is the SDK's to log.
 */
export async function flushTraces(): Promise<void> {
  const provider: unknown = trace.getTracerProvider();
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  const flush = (delegate as { forceFlush?: () => Promise<void> }).forceFlush;
  if (typeof flush === 'function') await flush.call(delegate);
}

/**
 * The pino `mixin` of agentloom's loggers: `trace_id` and `span_id` of the active span on every line logged inside
 * one (a step's lines, its model and tool calls'); nothing otherwise.
 */
export function traceLogFields(): Record<string, string> {
  // A new object each time: pino merges the line's fields into it.
  const span = trace.getActiveSpan();
  if (!span) return {};
  const ids = span.spanContext();
  return trace.isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}

/** A step's span: run the step inside it, end it with the step's outcome. */
export interface StepTrace {
  /** Runs `work` with the step's span active: its model and tool spans are its children, its log lines carry ids. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Ends the span with how the step ended (`detail`: the committed outcome). Later calls do nothing. */
  end(outcome: StepRun['outcome'], detail?: LeafOutcome | NodeSuspended): void;
}

/** What a run's ended status is, for its root span. */
export interface RunEnd {
  status: string;
  error?: unknown;
}

/**
 * The tracing of an engine's runs (one per engine, when an OpenTelemetry SDK was registered before it was made).
 */
export class RunTracing {
  readonly tracer: Tracer;

  /** @param captureContent record tool call arguments of pauses (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) */
  constructor(readonly captureContent: boolean) {
    this.tracer = trace.getTracer('agentloom');
  }

  /**
   * Whether an SDK is registered now: the API's tracer gives a span a valid trace id only then (a sampled-out span
   * too). Checked once, when an engine is made.
   */
  static sdkRegistered(): boolean {
    const probe = trace.getTracer('agentloom').startSpan('probe', { root: true });
    return trace.isSpanContextValid(probe.spanContext());
  }

  /** The span of a claimed step of a leaf; `queued`: it came through the queue (its wait is recorded). */
  step(inv: InvocationRow, node: NodeRow, queued: boolean): StepTrace {
    // The step's parent is its node's span (emitted when the run ends).
    const parent = runContext(inv, node.path);
    const readyAt = queued ? context.active().getValue(READY_AT_KEY) : undefined;
    const span = this.tracer.startSpan(
      `step ${node.agent}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          // The node's attributes, not its invocation's: the node's own span is the agent's one invocation.
          ...nodeAttributes(nodeOf(inv, node)),
          'agentloom.attempt': node.attempt,
          ...(typeof readyAt === 'number'
            ? { 'agentloom.queue.wait_ms': Math.max(0, Date.now() - readyAt) }
            : {}),
        },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    let ended = false;
    const captureContent = this.captureContent;
    return {
      run: (work) => context.with(active, work),
      end(outcome, detail) {
        if (ended) return;
        ended = true;
        span.setAttribute('agentloom.step.outcome', outcome);
        if (detail && !('suspend' in detail)) {
          if (detail.status === 'failed') recordError(span, detail.error);
          if (detail.status === 'paused') {
            for (const r of detail.requests) {
              span.addEvent('agentloom.pause', {
                'agentloom.pause.kind': r.kind,
                'gen_ai.tool.name': r.name,
                'gen_ai.tool.call.id': r.originalCallId,
                'agentloom.pause.call_id': r.callId,
                ...(captureContent ? { 'gen_ai.tool.call.arguments': jsonAttribute(r.args) } : {}),
              });
            }
          }
        }
        span.end();
      },
    };
  }

  /** Ends a step's span on a thrown failure (the queue delivers the job again). */
  static fail(step: StepTrace | undefined, err: unknown): void {
    if (!step) return;
    step.end('stopped', { status: 'failed', error: { code: errorCodeOf(err), message: messageOf(err) } });
  }

  /**
   * The run ended (`status`): its nodes' spans, from their rows (`nodes` when the caller has them, else read with
   * `db` — only when the trace is sampled). Called where the run's end is written.
   */
  async runEnded(db: Db, inv: InvocationRow, end: RunEnd, nodes?: NodeRow[]): Promise<void> {
    const rootPath = inv.rootAgent;
    const root = this.nodeSpan(
      inv,
      { path: rootPath, parentPath: null, agent: inv.rootAgent },
      inv.createdAt,
    );
    if (!root.isRecording()) return;
    const rows = nodes ?? (await invocationNodes(db, inv.id));
    for (const row of rows) {
      if (row.path === rootPath) {
        setNodeAttributes(root, inv, row);
        continue;
      }
      const span = this.nodeSpan(inv, row, row.createdAt);
      setNodeAttributes(span, inv, row);
      if (row.status === 'failed') recordError(span, row.error);
      span.end(row.updatedAt);
    }
    root.setAttribute('agentloom.invocation.status', end.status);
    if (end.status === 'failed') recordError(root, end.error);
    else if (end.status === 'completed') root.setStatus({ code: SpanStatusCode.OK });
    root.end();
  }

  private nodeSpan(
    inv: InvocationRow,
    node: { path: string; parentPath: string | null; agent: string },
    startTime: Date,
  ): Span {
    const parent = runContext(inv, node.parentPath);
    return startSpanWithIds(
      this.tracer,
      `invoke_agent ${node.agent}`,
      { kind: SpanKind.INTERNAL, startTime },
      parent,
      { traceId: invocationTraceId(inv.id, inv.traceparent), spanId: nodeSpanId(inv.id, node.path) },
    );
  }
}

function setNodeAttributes(span: Span, inv: InvocationRow, row: NodeRow): void {
  span.setAttributes(agentInvocationAttributes(nodeOf(inv, row)));
  span.setAttribute('agentloom.node.status', row.status);
  span.setAttribute('agentloom.node.attempts', row.attempt);
  const iteration = row.checkpoint.iteration;
  if (row.kind === 'loop' && typeof iteration === 'number') {
    span.setAttribute('agentloom.loop.iterations', iteration + 1);
  }
}

function nodeOf(inv: InvocationRow, node: NodeRow) {
  return {
    invocationId: inv.id,
    sessionId: inv.sessionId,
    app: inv.app,
    agent: node.agent,
    kind: node.kind,
    path: node.path,
  };
}

/**
 * The parent context of a span of `inv`: the span of the node at `parentPath`, or (undefined) the caller's span —
 * none for the root of a trace of the run's own. The sampled flag of a named parent is the caller's; a derived
 * trace is marked so that {@link RunSampler} decides its spans on the trace id, as it decides the root.
 */
function runContext(inv: InvocationRow, parentPath: string | null | undefined): Context {
  const caller = inv.traceparent ? parseTraceparent(inv.traceparent) : undefined;
  const base = caller ? ROOT_CONTEXT : ROOT_CONTEXT.setValue(DERIVED_TRACE, true);
  const spanId = parentPath == null ? caller?.spanId : nodeSpanId(inv.id, parentPath);
  if (spanId === undefined) return base;
  return trace.setSpanContext(base, {
    traceId: caller?.traceId ?? invocationTraceId(inv.id, null),
    spanId,
    traceFlags: caller ? caller.flags : TraceFlags.SAMPLED,
    isRemote: true,
  });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
