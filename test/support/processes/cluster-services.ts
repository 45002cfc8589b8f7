/**
 * Per-file services of the distributed e2e suite on the shared test servers: a database with the fixture ledger's
 * tables, a queue prefix, a producer/reader engine in the test process serving the workers' apps module, a pool
 * for direct queries; enqueueing tagged runs and waiting for them to complete.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterAll } from 'vitest';
import { createEngine, type AppDefinition, type Engine } from '../../../src/index.js';
import { LEDGER_DDL } from '../../e2e/fixtures/ledger.js';
import { APPS_MODULE, type ClusterOptions } from './cluster-worker.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../services/services.js';
import { waitFor } from '../assert/wait-for.js';

/** A pg pool for direct queries whose idle-client errors (a restarted server) are ignored. */
export function sqlPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  return pool;
}

/** Creates the fixture ledger tables (idempotent). */
export async function prepareLedger(url: string): Promise<void> {
  const pool = sqlPool(url);
  try {
    await pool.query(LEDGER_DDL);
  } finally {
    await pool.end();
  }
}

/** Opens the gate the fixture's tools and models wait for. */
export async function openGate(ledger: pg.Pool, name: string): Promise<void> {
  await ledger.query('INSERT INTO e2e_gates (name) VALUES ($1) ON CONFLICT DO NOTHING', [name]);
}

/**
 * A producer/reader engine in the test process (no worker, no reconciler) on the cluster's queue, serving the
 * workers' apps module (same definition hashes).
 */
export async function producerEngine(options: ClusterOptions): Promise<Engine> {
  const queue =
    (options.queue ?? 'redis') === 'redis'
      ? { redis: options.redisUrl as string, prefix: options.prefix }
      : { postgres: options.databaseUrl, prefix: options.prefix };
  // By path, as the workers load it: the same module, so the same definition hashes.
  const served = ((await import(options.appsModule ?? APPS_MODULE)) as { apps: AppDefinition[] }).apps;
  return createEngine({
    apps: served,
    database: options.databaseUrl,
    queue,
    worker: false,
    leaseMs: options.leaseMs,
    logger: pino({ level: 'error' }),
  });
}

/** What a test file of the suite works with. */
export interface FileServices {
  /** The cluster options of this file: its own database (with the ledger tables), its own queue prefix. */
  options: ClusterOptions;
  /** A producer/reader engine on them (no worker). */
  engine: Engine;
  /** A pool on the file's database for direct queries (engine tables and ledger). */
  db: pg.Pool;
}

/**
 * Per-file services on the shared test servers: a database cloned from the migrated template with the ledger
 * tables, a queue prefix, a producer engine and a pool, closed after the file. Call at the top level of a file.
 */
export async function fileServices(overrides: Partial<ClusterOptions> = {}): Promise<FileServices> {
  const databaseUrl = await createTestDatabase();
  const queue = overrides.queue ?? 'redis';
  const options: ClusterOptions = {
    databaseUrl,
    queue,
    ...(queue === 'redis' ? { redisUrl: testRedisUrl() } : {}),
    prefix: testQueuePrefix(),
    leaseMs: 2_000,
    ...overrides,
  };
  await prepareLedger(databaseUrl);
  const engine = await producerEngine(options);
  const db = sqlPool(databaseUrl);
  afterAll(async () => {
    await engine.close();
    await db.end();
  });
  return { options, engine, db };
}

/** Enqueues `count` invocations of `app`, each tagged with its own run (in state) so ledgers can find it. */
export async function enqueueRuns(
  engine: Engine,
  app: string,
  count: number,
  tag: string,
): Promise<{ ids: string[]; runs: Map<string, string> }> {
  const runs = new Map<string, string>();
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const run = `${tag}-${i}`;
    const { invocationId } = await engine.enqueue({
      app,
      userId: 'e2e',
      input: 'go',
      stateDelta: { run },
    });
    runs.set(run, invocationId);
    ids.push(invocationId);
  }
  return { ids, runs };
}

/** Invocation statuses by count. */
export async function statusCounts(db: pg.Pool, ids: string[]): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM invocations WHERE id = ANY($1) GROUP BY status',
    [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/**
 * Waits until every invocation completed; fails at once when one failed or was cancelled. Database errors
 * (a server being restarted) count as "not yet".
 */
export async function waitAllCompleted(db: pg.Pool, ids: string[], timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const counts = await statusCounts(db, ids).catch(() => undefined);
      if (!counts) return false;
      if (counts.failed || counts.cancelled) {
        const { rows } = await db.query(
          "SELECT id, status, error FROM invocations WHERE id = ANY($1) AND status IN ('failed', 'cancelled') LIMIT 3",
          [ids],
        );
        throw new Error(`invocations ended badly: ${JSON.stringify(counts)} ${JSON.stringify(rows)}`);
      }
      return counts.completed === ids.length;
    },
    { timeoutMs, intervalMs: 250, what: `${ids.length} invocations to complete` },
  );
}
