/**
 * A worker process (`agentloom worker`): a stateless engine on PostgreSQL that consumes step jobs from BullMQ
 * (on Redis or on PostgreSQL) and runs the reconciler; start as many as you like. SIGTERM / SIGINT drain it:
 * no new jobs, running steps get the grace period, the rest are released to other workers, exit 0.
 */
import { pino, type Logger } from 'pino';
import type { WorkerConfig } from '../config/worker-config.js';
import { createEngine } from '../engine/create-engine.js';
import type { Engine } from '../engine/engine.js';

/** How long after the grace period a stuck shutdown is cut short. */
const FORCE_EXIT_AFTER_GRACE_MS = 15_000;

/** A started worker process. */
export interface RunningWorker {
  engine: Engine;
  /** Drains and closes the engine (what SIGTERM does), resolving when it is closed. */
  shutdown(): Promise<void>;
}

/** Starts a worker from its configuration and installs the signal handlers. */
export async function runWorker(config: WorkerConfig, logger?: Logger): Promise<RunningWorker> {
  const log = logger ?? pino({ level: config.logLevel, base: { pid: process.pid } });
  // Background failures (a connection dropped mid-request) are logged; a worker never dies of one.
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  const queue =
    config.queue === 'redis'
      ? { redis: config.redisUrl as string, prefix: config.prefix }
      : { postgres: config.databaseUrl, prefix: config.prefix };
  const engine = await createEngine({
    apps: config.apps,
    database: config.databaseUrl,
    queue,
    worker: { concurrency: config.concurrency },
    leaseMs: config.leaseMs,
    logger: log,
  });
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> =>
    (stopping ??= (async () => {
      log.info({ graceMs: config.graceMs }, 'worker stopping');
      const { released } = await engine.drain({ graceMs: config.graceMs });
      await engine.close();
      log.info({ released }, 'worker stopped');
    })());
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      // A drain that cannot finish (a queue server that does not answer) must not keep the process alive: the
      // released steps are already safe in Postgres, and unreleased ones are taken over when their lease lapses.
      setTimeout(() => {
        log.warn({ afterMs: config.graceMs + FORCE_EXIT_AFTER_GRACE_MS }, 'worker stop timed out; exiting');
        process.exit(0);
      }, config.graceMs + FORCE_EXIT_AFTER_GRACE_MS).unref();
      shutdown()
        .then(() => process.exit(0))
        .catch((err: unknown) => {
          log.error({ err }, 'worker shutdown failed');
          process.exit(1);
        });
    });
  }
  log.info(
    {
      queue: config.queue,
      concurrency: config.concurrency,
      leaseMs: config.leaseMs,
      apps: [...engine.apps.values()].map((a) => ({ name: a.name, definitionHash: a.definitionHash })),
    },
    'worker started',
  );
  return { engine, shutdown };
}
