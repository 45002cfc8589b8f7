/**
 * The life of an agentloom process (`agentloom api`, `worker`, `dev`): its logger, its engine and what it serves
 * over it, and how SIGTERM / SIGINT stop it — once, draining when asked, within a deadline, exit 0 (1 when stopping
 * failed). Calls createEngine; api/, workers/ and cli/ call it.
 */
import { pino, type Logger } from 'pino';
import { LOG_REDACTION } from '../core/log-redaction.js';
import { createEngine } from './create-engine.js';
import { flushTraces, traceLogFields } from './observe/run-trace.js';
import type { EngineOptions } from './engine-options.js';
import type { Engine } from './engine.js';

/** After a signal, how long closing may take before the process exits anyway. */
const CLOSE_DEADLINE_MS = 10_000;
/** After a signal, how long past its grace period a drain may take before the process exits anyway. */
const DRAIN_DEADLINE_AFTER_GRACE_MS = 15_000;

/**
 * The logger of a process: `logger` when given, else pino JSON at `level` with the pid on every line. Also logs
 * unhandled rejections instead of dying of them: background failures (a connection dropped mid-request) must
 * not take down a process whose state is safe in PostgreSQL anyway.
 */
function processLogger(level: string, logger?: Logger): Logger {
  const log =
    logger ?? pino({ level, base: { pid: process.pid }, redact: LOG_REDACTION, mixin: traceLogFields });
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  return log;
}

/** Options of {@link handleShutdownSignals}. */
interface ShutdownOptions {
  /** Names the process in the log: `<name> stopping`, `<name> stopped`, `<name> stop timed out; exiting`. */
  name: string;
  logger: Logger;
  /** Fields of the `<name> stopping` line. */
  stoppingFields?: Record<string, unknown>;
  /** Stops the process's work; what it resolves with is logged with `<name> stopped`. */
  stop: () => Promise<Record<string, unknown> | void>;
  /**
   * After a signal, exit (code 0) anyway once this many ms passed: a stop that cannot finish (a server that does
   * not answer) must not keep the process alive, and what it did not finish is recovered by others.
   */
  forceExitAfterMs: number;
}

/**
 * Installs the SIGTERM / SIGINT handlers of a process and returns its shutdown: the first call (or signal) runs
 * `stop` and logs around it; later calls return the same promise. A signal exits the process when the shutdown
 * settles: 0 when it succeeded, 1 when it failed.
 */
function handleShutdownSignals(options: ShutdownOptions): () => Promise<void> {
  const { name, logger: log } = options;
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> =>
    (stopping ??= (async () => {
      log.info(options.stoppingFields ?? {}, `${name} stopping`);
      const fields = await options.stop();
      log.info(fields ?? {}, `${name} stopped`);
    })());
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      setTimeout(() => {
        log.warn({ afterMs: options.forceExitAfterMs }, `${name} stop timed out; exiting`);
        process.exit(0);
      }, options.forceExitAfterMs).unref();
      shutdown()
        .then(() => process.exit(0))
        .catch((err: unknown) => {
          log.error({ err }, `${name} shutdown failed`);
          process.exit(1);
        });
    });
  }
  return shutdown;
}

/** What a process serves over its engine, and how it stops. */
export interface Served {
  /** Stops what needs the engine to answer (the HTTP API): called before the engine closes. */
  close?: () => Promise<void>;
  /** Stops what reports on the engine while it drains (a worker's metrics endpoint): after the engine closed. */
  closeAfterEngine?: () => Promise<void>;
}

/** Options of {@link startProcess}. */
export interface ProcessOptions<S extends Served> {
  /** Names the process in its log lines (`<name> stopping`, `<name> stopped`). */
  name: string;
  /** Level of the process's pino JSON logger. */
  logLevel: string;
  /** A logger to use instead (dev's terminal logger, a test's). */
  logger?: Logger | undefined;
  /** The engine's options; its logger is the process's. */
  engine: Omit<EngineOptions, 'logger'>;
  /** Starts what the process serves over the engine; when it throws, the engine is closed before the rethrow. */
  serve?: (engine: Engine, logger: Logger) => Promise<S>;
  /**
   * On a signal, first drain the engine: no new jobs, running steps get this many ms, the rest are released to
   * other workers (logged as `released`). Undefined: close at once.
   */
  drainGraceMs?: number;
}

/** A started process. */
export interface StartedProcess<S extends Served> {
  engine: Engine;
  logger: Logger;
  served: S;
  /** Stops it as SIGTERM does, without exiting; later calls return the same promise. */
  shutdown(): Promise<void>;
}

/**
 * Starts a process: its logger (see {@link processLogger}), its engine, what it serves, then its signal handlers
 * (see {@link handleShutdownSignals}). Stopping drains (when asked), closes what it serves, then the engine.
 */
export async function startProcess<S extends Served = Served>(
  options: ProcessOptions<S>,
): Promise<StartedProcess<S>> {
  const { name, drainGraceMs } = options;
  const log = processLogger(options.logLevel, options.logger);
  const engine = await createEngine({ ...options.engine, logger: log });
  let served: S;
  try {
    served = options.serve ? await options.serve(engine, log) : ({} as S);
  } catch (err) {
    await engine.close();
    throw err;
  }
  const shutdown = handleShutdownSignals({
    name,
    logger: log,
    ...(drainGraceMs === undefined ? {} : { stoppingFields: { graceMs: drainGraceMs } }),
    // A drain that cannot finish (a queue server that does not answer) must not keep the process alive: the
    // released steps are already safe in Postgres, and unreleased ones are taken over when their lease lapses.
    forceExitAfterMs:
      drainGraceMs === undefined ? CLOSE_DEADLINE_MS : drainGraceMs + DRAIN_DEADLINE_AFTER_GRACE_MS,
    stop: async () => {
      const drained = drainGraceMs === undefined ? undefined : await engine.drain({ graceMs: drainGraceMs });
      await served.close?.();
      await engine.close();
      await served.closeAfterEngine?.();
      // The spans of the steps that just ended, exported before the process exits.
      await flushTraces();
      return drained && { released: drained.released };
    },
  });
  return { engine, logger: log, served, shutdown };
}

/** The apps an engine serves, as a start line logs them: name and definition hash. */
export function appVersions(engine: Engine): { name: string; definitionHash: string }[] {
  return [...engine.apps.values()].map((a) => ({ name: a.name, definitionHash: a.definitionHash }));
}
