/**
 * W1 with tracing off and on: PostgreSQL + in-process queue, as `agentloom-pg-local`. Off and on phases
 * alternate (10 pairs; a phase is a warm-up and 5 measured W1 runs, its sample their median); each phase opens its own engine, since an engine traces only
 * when an SDK was registered before it was made. On: agentloom's SDK setup as `agentloom worker` has it (its id
 * generator and run sampler, always on, a batch span processor) exporting OTLP/HTTP to a receiver in this
 * process — a node:http server that reads and counts each payload, as a collector would.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { pino } from 'pino';
import { AgentloomIdGenerator, createEngine, RunSampler, type Engine } from '../../../src/index.js';
import type { BenchContext } from '../context.js';
import { summarize, type SuiteResult } from '../measure.js';
import { createDatabase } from '../services.js';
import { apps } from './apps.js';
import { w1 } from './workloads.js';

/** Off/on pairs, and W1 runs per phase (a phase's sample is their median). */
const PAIRS = 10;
const RUNS_PER_PHASE = 5;

interface Receiver {
  url: string;
  payloads: number;
  bytes: number;
  close: () => Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const state = { payloads: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (state.bytes += chunk.length));
    req.on('end', () => {
      state.payloads++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    get payloads() {
      return state.payloads;
    },
    get bytes() {
      return state.bytes;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Registers a tracer provider exporting to `url`, as agentloom's SDK setup configures one; returns its shutdown. */
function registerTracing(url: string): () => Promise<void> {
  const root = new AlwaysOnSampler();
  const provider = new NodeTracerProvider({
    idGenerator: new AgentloomIdGenerator(),
    sampler: new RunSampler(new ParentBasedSampler({ root }), root),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  // As the Node SDK does: the global tracer provider, an AsyncLocalStorage context manager, W3C propagators.
  provider.register();
  return async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  };
}

async function phase(url: string, traced: Receiver | undefined): Promise<number> {
  const stop = traced ? registerTracing(traced.url) : undefined;
  let engine: Engine | undefined;
  try {
    engine = await createEngine({
      apps,
      database: url,
      queue: 'local',
      worker: { concurrency: 64 },
      logger: pino({ level: 'error' }),
    });
    await w1(engine); // warm-up of this engine
    const samples: number[] = [];
    for (let i = 0; i < RUNS_PER_PHASE; i++) samples.push(await w1(engine));
    return summarize(samples).median;
  } finally {
    await engine?.close();
    await stop?.();
  }
}

/** The `tracing` suite: W1 ms/step with tracing off and on, alternating. */
export async function runTracing(ctx: BenchContext): Promise<SuiteResult> {
  const result: SuiteResult = {
    suite: 'tracing',
    label: 'agentloom, PostgreSQL + in-process queue: W1 with tracing off and on',
    kind: 'extra',
    figures: {},
    errors: [],
  };
  const url = await createDatabase(ctx.postgresUrl, 'al_tracing');
  const receiver = await startReceiver();
  try {
    const off: number[] = [];
    const on: number[] = [];
    for (let i = 0; i < PAIRS; i++) {
      off.push(await phase(url, undefined));
      on.push(await phase(url, receiver));
    }
    const offSummary = summarize(off);
    const onSummary = summarize(on);
    result.extra = {
      off: offSummary,
      on: onSummary,
      costPerStepMs: onSummary.median - offSummary.median,
      payloads: receiver.payloads,
      bytes: receiver.bytes,
    };
  } catch (err) {
    result.errors.push(String(err instanceof Error ? (err.stack ?? err.message) : err));
  } finally {
    await receiver.close();
  }
  return result;
}
