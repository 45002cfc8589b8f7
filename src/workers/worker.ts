/**
 * A worker process (`agentloom worker`): a stateless engine on PostgreSQL that consumes step jobs from BullMQ
 * (on Redis or on PostgreSQL) and runs the reconciler; start as many as you like. SIGTERM / SIGINT drain it:
 * no new jobs, running steps get the grace period, the rest are released to other workers, exit 0. With
 * `--metrics-port` it serves Prometheus metrics of its steps, model calls and tool calls.
 */
import type { Logger } from 'pino';
import { queueOption } from '../config/process-config.js';
import type { WorkerConfig } from '../config/worker-config.js';
import { createEngine } from '../engine/create-engine.js';
import type { Engine } from '../engine/engine.js';
import { handleShutdownSignals, processLogger } from '../engine/process-lifecycle.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import { StepMetrics } from './step-metrics.js';

/** How long after the grace period a stuck shutdown is cut short. */
const FORCE_EXIT_AFTER_GRACE_MS = 15_000;

/** A started worker process. */
export interface RunningWorker {
  engine: Engine;
  /** Where its metrics are served (`http://…`), when it was given a metrics port. */
  metricsUrl: string | undefined;
  /** Drains and closes the engine (what SIGTERM does), resolving when it is closed. */
  shutdown(): Promise<void>;
}

/** Starts a worker from its configuration and installs the signal handlers. */
export async function runWorker(config: WorkerConfig, logger?: Logger): Promise<RunningWorker> {
  const log = processLogger(config.logLevel, logger);
  const metrics = config.metricsPort === undefined ? undefined : new StepMetrics();
  const engine = await createEngine({
    apps: config.apps,
    database: config.databaseUrl,
    queue: queueOption(config),
    worker: { concurrency: config.concurrency },
    leaseMs: config.leaseMs,
    logger: log,
    ...(metrics ? { observer: metrics.observer } : {}),
  });
  let server: MetricsServer | undefined;
  if (metrics && config.metricsPort !== undefined) {
    try {
      server = await startMetricsServer({
        registry: metrics.registry,
        port: config.metricsPort,
        onError: (err) => log.warn({ err }, 'metrics scrape failed'),
      });
    } catch (err) {
      await engine.close();
      throw err;
    }
    log.info({ url: server.url, port: server.port }, 'worker metrics listening');
  }
  const shutdown = handleShutdownSignals({
    name: 'worker',
    logger: log,
    stoppingFields: { graceMs: config.graceMs },
    // A drain that cannot finish (a queue server that does not answer) must not keep the process alive: the
    // released steps are already safe in Postgres, and unreleased ones are taken over when their lease lapses.
    forceExitAfterMs: config.graceMs + FORCE_EXIT_AFTER_GRACE_MS,
    stop: async () => {
      const { released } = await engine.drain({ graceMs: config.graceMs });
      await engine.close();
      await server?.close();
      return { released };
    },
  });
  log.info(
    {
      queue: config.queue,
      concurrency: config.concurrency,
      leaseMs: config.leaseMs,
      apps: [...engine.apps.values()].map((a) => ({ name: a.name, definitionHash: a.definitionHash })),
      ...(server ? { metrics: server.url } : {}),
    },
    'worker started',
  );
  return { engine, metricsUrl: server?.url, shutdown };
}
