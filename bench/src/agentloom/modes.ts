/**
 * agentloom's deployment modes as the benchmark runs them. Each mode gets a fresh database; the bench process
 * holds an engine that enqueues and waits (and, in the in-process modes, also runs the steps):
 *
 * | mode          | store                 | queue                          | steps run in                 |
 * |---------------|-----------------------|--------------------------------|------------------------------|
 * | pglite        | PGlite on disk        | in-process                     | the bench process            |
 * | pg-local      | PostgreSQL            | in-process (concurrency 64)    | the bench process            |
 * | pg-redis-1/2  | PostgreSQL            | BullMQ on Redis                | 1 or 2 `agentloom worker`s   |
 * | pg-pgqueue-1  | PostgreSQL            | BullMQ on its PostgreSQL store | 1 `agentloom worker`         |
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { createEngine, type Engine } from '../../../src/index.js';
import type { BenchContext } from '../context.js';
import { createDatabase } from '../services.js';
import { apps } from './apps.js';
import { startWorkers, type WorkerOptions, type WorkerProcess } from './workers.js';

export type ModeName = 'pglite' | 'pg-local' | 'pg-redis-1' | 'pg-redis-2' | 'pg-pgqueue-1';

export const MODE_LABELS: Readonly<Record<ModeName, string>> = Object.freeze({
  pglite: 'agentloom, embedded PGlite',
  'pg-local': 'agentloom, PostgreSQL + in-process queue',
  'pg-redis-1': 'agentloom, PostgreSQL + BullMQ/Redis, 1 worker process',
  'pg-redis-2': 'agentloom, PostgreSQL + BullMQ/Redis, 2 worker processes',
  'pg-pgqueue-1': 'agentloom, PostgreSQL-only (BullMQ on PostgreSQL), 1 worker process',
});

/** An opened mode. */
export interface ModeTarget {
  engine: Engine;
  /** The PostgreSQL database name (undefined for PGlite). */
  database: string | undefined;
  databaseUrl: string | undefined;
  workers: WorkerProcess[];
  /** Starts one more worker process like the others (distributed modes; `extra` options) and adds it. */
  spawnWorker?: (extra?: Partial<WorkerOptions>) => Promise<WorkerProcess>;
  close(): Promise<void>;
}

/** Options of {@link openMode}. */
export interface OpenModeOptions {
  /** Lease of the workers' steps (default: agentloom's). */
  leaseMs?: number;
  /** Database name (default `al_<mode>`). */
  database?: string;
  /** Worker processes of a distributed mode (default: the mode's, 1 or 2). */
  workers?: number;
}

const silent = (): Logger => pino({ level: 'error' });

/** Opens `mode` on a fresh database, starting its worker processes if it has any. */
export async function openMode(
  mode: ModeName,
  ctx: BenchContext,
  options: OpenModeOptions = {},
): Promise<ModeTarget> {
  if (mode === 'pglite') {
    const engine = await createEngine({
      apps,
      database: { pglite: join(ctx.workDir, 'pglite') },
      worker: { concurrency: 64 },
      logger: silent(),
    });
    return { engine, database: undefined, databaseUrl: undefined, workers: [], close: () => engine.close() };
  }
  const database = options.database ?? `al_${mode.replace(/-/g, '_')}`;
  const url = await createDatabase(ctx.postgresUrl, database);
  if (mode === 'pg-local') {
    const engine = await createEngine({
      apps,
      database: url,
      queue: 'local',
      worker: { concurrency: 64 },
      logger: silent(),
    });
    return { engine, database, databaseUrl: url, workers: [], close: () => engine.close() };
  }
  const prefix = `b${randomBytes(4).toString('hex')}`;
  const queueKind = mode === 'pg-pgqueue-1' ? 'postgres' : 'redis';
  const queue = queueKind === 'redis' ? { redis: ctx.redisUrl, prefix } : { postgres: url, prefix };
  // The producer migrates the database before any worker starts (workers then find it up to date).
  const engine = await createEngine({ apps, database: url, queue, worker: false, logger: silent() });
  const count = options.workers ?? (mode === 'pg-redis-2' ? 2 : 1);
  const workerOptions = {
    databaseUrl: url,
    queue: queueKind,
    redisUrl: ctx.redisUrl,
    prefix,
    logDir: ctx.workDir,
    leaseMs: options.leaseMs,
  } as const;
  let workers: WorkerProcess[];
  try {
    workers = await startWorkers(count, workerOptions);
  } catch (err) {
    await engine.close();
    throw err;
  }
  return {
    engine,
    database,
    databaseUrl: url,
    workers,
    spawnWorker: async (extra = {}) => {
      const [worker] = await startWorkers(1, { ...workerOptions, ...extra });
      workers.push(worker as WorkerProcess);
      return worker as WorkerProcess;
    },
    close: async () => {
      await Promise.all(workers.map((w) => w.stop()));
      await engine.close();
    },
  };
}
