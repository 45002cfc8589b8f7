/**
 * The pure parts of tracing: traceparent parsing, the run's trace id and its nodes' span ids, the id generator's
 * slot against the SDK's real Tracer, the run sampler's decisions, and a malformed header ignored with a debug line.
 */
import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { traceparentOf } from '../../src/api/http/trace-header.js';
import {
  formatTraceparent,
  invocationTraceId,
  nodeSpanId,
  parseTraceparent,
} from '../../src/core/trace-context.js';
import { errorCodeOf, genAiProvider, loopIterationOf } from '../../src/engine/observe/span-attributes.js';
import { AgentloomIdGenerator, startSpanWithIds } from '../../src/engine/observe/trace-ids.js';
import { DERIVED_TRACE, RunSampler } from '../../src/engine/observe/trace-sampler.js';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('parseTraceparent', () => {
  it('reads a valid W3C traceparent', () => {
    expect(parseTraceparent(VALID)).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      flags: 1,
    });
    expect(formatTraceparent(parseTraceparent(VALID)!)).toBe(VALID);
    // A later version may carry more fields.
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra')?.flags).toBe(0);
  });

  it.each([
    ['absent', undefined],
    ['not a string', 42],
    ['garbage', 'hello'],
    ['upper case', VALID.toUpperCase()],
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['zero span id', `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`],
    ['short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['extra fields on version 00', `${VALID}-x`],
  ])('refuses %s', (_, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('derived ids', () => {
  it("a run's trace id: the caller's, else the invocation id's UUID digits, else a hash", () => {
    const id = 'inv_0f8fad5b-d9cb-469f-a165-70867728950e';
    expect(invocationTraceId(id)).toBe('0f8fad5bd9cb469fa16570867728950e');
    expect(invocationTraceId(id, VALID)).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(invocationTraceId(id, 'malformed')).toBe('0f8fad5bd9cb469fa16570867728950e');
    expect(invocationTraceId('custom-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(invocationTraceId('custom-id')).toBe(invocationTraceId('custom-id'));
  });

  it("a node's span id: 16 hex digits, the same in every process, different per node and per run", () => {
    const a = nodeSpanId('inv_1', 'root/fan/loop#0');
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(nodeSpanId('inv_1', 'root/fan/loop#0')).toBe(a);
    expect(nodeSpanId('inv_1', 'root/fan/loop#1')).not.toBe(a);
    expect(nodeSpanId('inv_2', 'root/fan/loop#0')).not.toBe(a);
  });
});

describe('AgentloomIdGenerator in the SDK', () => {
  it('gives a span the chosen ids, and random ones to the spans around it', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      idGenerator: new AgentloomIdGenerator(),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('test');
    const traceId = invocationTraceId('inv_0f8fad5b-d9cb-469f-a165-70867728950e');
    const spanId = nodeSpanId('inv_x', 'root');
    const chosen = startSpanWithIds(tracer, 'chosen', {}, ROOT_CONTEXT, { traceId, spanId });
    expect(chosen.spanContext()).toMatchObject({ traceId, spanId });
    const child = tracer.startSpan('child', {}, trace.setSpan(ROOT_CONTEXT, chosen));
    expect(child.spanContext().traceId).toBe(traceId);
    expect(child.spanContext().spanId).not.toBe(spanId);
    const other = tracer.startSpan('other', {}, ROOT_CONTEXT);
    expect(other.spanContext().traceId).not.toBe(traceId);
    // A child of a named (remote) parent: the chosen span id, the parent's trace.
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      traceId,
      spanId,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    const named = startSpanWithIds(tracer, 'named', {}, parent, { spanId: nodeSpanId('inv_x', 'root/a') });
    expect(named.spanContext()).toMatchObject({ traceId, spanId: nodeSpanId('inv_x', 'root/a') });
  });
});

describe('RunSampler', () => {
  const ratio = new TraceIdRatioBasedSampler(0.5);
  const sampler = new RunSampler(new ParentBasedSampler({ root: ratio }), ratio);
  const decide = (ctx: typeof ROOT_CONTEXT, traceId: string) =>
    sampler.shouldSample(ctx, traceId, 'span', 0, {}, []).decision;

  it('decides the named-parent spans of a derived trace as its root, on the trace id', () => {
    const ids = Array.from({ length: 64 }, (_, i) => invocationTraceId(`run-${i}`));
    const derived = ROOT_CONTEXT.setValue(DERIVED_TRACE, true);
    let sampled = 0;
    for (const traceId of ids) {
      const asRoot = decide(ROOT_CONTEXT, traceId);
      // Under a named parent whose flag says sampled (as the engine names it): the root's decision anyway.
      const parent = trace.setSpanContext(derived, {
        traceId,
        spanId: nodeSpanId(traceId, 'root'),
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      });
      expect(decide(parent, traceId)).toBe(asRoot);
      if (asRoot === SamplingDecision.RECORD_AND_SAMPLED) sampled++;
    }
    // Some of each: the test sees both decisions.
    expect(sampled).toBeGreaterThan(0);
    expect(sampled).toBeLessThan(ids.length);
  });

  it("follows a caller's sampled flag", () => {
    const off = new RunSampler(
      new ParentBasedSampler({ root: new AlwaysOffSampler() }),
      new AlwaysOnSampler(),
    );
    const caller = (flags: number) =>
      trace.setSpanContext(ROOT_CONTEXT, {
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanId: '00f067aa0ba902b7',
        traceFlags: flags,
        isRemote: true,
      });
    expect(off.shouldSample(caller(1), '4bf92f3577b34da6a3ce929d0e0e4736', 's', 0, {}, []).decision).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(off.shouldSample(caller(0), '4bf92f3577b34da6a3ce929d0e0e4736', 's', 0, {}, []).decision).toBe(
      SamplingDecision.NOT_RECORD,
    );
  });
});

describe('traceparent header', () => {
  it('passes a valid one on; ignores a malformed one with a debug line, never an error', () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const request = (traceparent: string | undefined) =>
      ({ headers: traceparent === undefined ? {} : { traceparent }, log }) as unknown as FastifyRequest;
    expect(traceparentOf(request(VALID))).toEqual({ traceparent: VALID });
    expect(traceparentOf(request(undefined))).toEqual({});
    expect(traceparentOf(request('00-nope'))).toEqual({});
    expect(lines).toEqual([
      expect.objectContaining({
        level: 20,
        msg: 'malformed traceparent header ignored',
        traceparent: '00-nope',
      }),
    ]);
  });
});

describe('span attributes', () => {
  it('names providers and reads loop iterations off node paths', () => {
    expect(genAiProvider('OpenAI')).toBe('openai');
    expect(genAiProvider('Gemini')).toBe('gcp.gemini');
    expect(genAiProvider('Azure OpenAI')).toBe('azure.ai.openai');
    expect(genAiProvider(undefined)).toBe('unknown');
    expect(loopIterationOf('flow/loop/leaf#3')).toBe(3);
    expect(loopIterationOf('flow/loop#1/leaf')).toBeUndefined();
    expect(loopIterationOf('flow')).toBeUndefined();
  });

  it("an error's code as the API answers it", () => {
    expect(errorCodeOf({ code: 'MODEL_ERROR', message: 'x' })).toBe('MODEL_ERROR');
    expect(errorCodeOf(new Error('plain'))).toBe('INTERNAL');
    expect(errorCodeOf(undefined)).toBe('INTERNAL');
  });
});
