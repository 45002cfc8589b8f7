/**
 * OpenTelemetry's Node SDK for `agentloom api`, `worker` and `dev`, started when the standard variables ask for
 * traces (OTEL_TRACES_EXPORTER other than `none`, or an OTLP endpoint); loaded lazily, so a process that exports
 * nothing loads nothing and pays nothing. OTLP over HTTP by default (the SDK reads OTEL_EXPORTER_OTLP_PROTOCOL,
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the exporter's variables itself). Installs agentloom's id
 * generator and run sampler (engine/observe/trace-ids.ts, trace-sampler.ts) and a `service.instance.id` per
 * process. The engine's graceful stop flushes it (process-lifecycle.ts).
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { loadEnv, type EnvConfig } from '../config/env.js';
import { AgentloomIdGenerator, RunSampler } from '../engine/index.js';

/** Whether the environment asks for traces. */
export function tracingRequested(env: EnvConfig): boolean {
  if (env.OTEL_TRACES_EXPORTER !== undefined) return env.OTEL_TRACES_EXPORTER !== 'none';
  return (
    env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
  );
}

/** Starts the SDK when the environment asks for traces (see the module's comment); a no-op otherwise. */
export async function startTracing(env: EnvConfig = loadEnv()): Promise<void> {
  if (!tracingRequested(env)) return;
  const { NodeSDK, tracing, resources } = await import('@opentelemetry/sdk-node');
  const name = env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  const rootName = name.replace(/^parentbased_/, '');
  const root =
    rootName === 'always_off'
      ? new tracing.AlwaysOffSampler()
      : rootName === 'traceidratio'
        ? new tracing.TraceIdRatioBasedSampler(env.OTEL_TRACES_SAMPLER_ARG ?? 1)
        : new tracing.AlwaysOnSampler();
  const base = name.startsWith('parentbased_') ? new tracing.ParentBasedSampler({ root }) : root;
  const namesService =
    env.OTEL_SERVICE_NAME !== undefined || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    ...(namesService ? {} : { serviceName: 'agentloom' }),
    resource: resources.resourceFromAttributes({
      // One per process: which worker ran a step (the pid, as in the lease owner and the logs).
      'service.instance.id': `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    }),
    idGenerator: new AgentloomIdGenerator(),
    sampler: new RunSampler(base, root),
    instrumentations: [],
  });
  sdk.start();
}
