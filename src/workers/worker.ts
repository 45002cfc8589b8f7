/**
 * A worker process (`agentloom worker`): a stateless engine on PostgreSQL that consumes step jobs from BullMQ
 * (on Redis or on PostgreSQL) and runs the reconciler; start as many as you like. SIGTERM / SIGINT drain it:
 * no new jobs, running steps get the grace period, the rest are released to other workers, exit 0. With
 * `--metrics-port` it serves Prometheus metrics of its steps, model calls and tool calls.
 */
import type { Logger } from 'pino';
import { backendOptions } from '../config/process-config.js';
import type { WorkerConfig } from '../config/worker-config.js';
import type { Engine } from '../engine/engine.js';
import { appVersions, startProcess, type Served } from '../engine/process-lifecycle.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import { StepMetrics } from './step-metrics.js';

/** A started worker process. */
export interface RunningWorker {
  engine: Engine;
  /** Where its metrics are served (`http://…`), when it was given a metrics port. */
  metricsUrl: string | undefined;
  /** Drains and closes the engine (what SIGTERM does), resolving when it is closed. */
  shutdown(): Promise<void>;
}

/** Serves `metrics` on `port`, kept open while the engine drains (scrapers see the drain). */
async function serveMetrics(
  metrics: StepMetrics,
  port: number,
  log: Logger,
): Promise<Served & { server: MetricsServer }> {
  const server = await startMetricsServer({
    registry: metrics.registry,
    port,
    onError: (err) => log.warn({ err }, 'metrics scrape failed'),
  });
  log.info({ url: server.url, port: server.port }, 'worker metrics listening');
  return { server, closeAfterEngine: () => server.close() };
}

/** Starts a worker from its configuration and installs the signal handlers. */
export async function runWorker(config: WorkerConfig, logger?: Logger): Promise<RunningWorker> {
  const { metricsPort } = config;
  const metrics = metricsPort === undefined ? undefined : new StepMetrics();
  const { engine, served, shutdown, ...started } = await startProcess<Served & { server?: MetricsServer }>({
    name: 'worker',
    logLevel: config.logLevel,
    logger,
    engine: {
      ...backendOptions(config),
      worker: { concurrency: config.concurrency },
      leaseMs: config.leaseMs,
      ...(metrics ? { observer: metrics.observer } : {}),
    },
    drainGraceMs: config.graceMs,
    ...(metrics && metricsPort !== undefined
      ? { serve: (_engine, log) => serveMetrics(metrics, metricsPort, log) }
      : {}),
  });
  const { server } = served;
  started.logger.info(
    {
      queue: config.queue,
      concurrency: config.concurrency,
      leaseMs: config.leaseMs,
      apps: appVersions(engine),
      ...(server ? { metrics: server.url } : {}),
    },
    'worker started',
  );
  return { engine, metricsUrl: server?.url, shutdown };
}
