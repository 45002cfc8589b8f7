/**
 * The life of an agentloom server process (`agentloom api`, `agentloom worker`): its logger, what it does with a
 * stray rejection, and how SIGTERM / SIGINT stop it — once, within a deadline, with exit code 0 (1 when stopping
 * failed).
 */
import { pino, type Logger } from 'pino';

/**
 * The logger of a process: `logger` when given, else pino JSON at `level` with the pid on every line. Also logs
 * unhandled rejections instead of dying of them: background failures (a connection dropped mid-request) must
 * not take down a process whose state is safe in PostgreSQL anyway.
 */
export function processLogger(level: string, logger?: Logger): Logger {
  const log = logger ?? pino({ level, base: { pid: process.pid } });
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
  return log;
}

/** Options of {@link handleShutdownSignals}. */
export interface ShutdownOptions {
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
export function handleShutdownSignals(options: ShutdownOptions): () => Promise<void> {
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
