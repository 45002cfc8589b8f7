/**
 * A chaos test's own PostgreSQL, for tests that restart or crash it (doing that to the shared test server would
 * disturb every other file): the server, the cluster options on it, a pool on it and one on the fixture ledger
 * (which lives on the shared server: the outside world of the tools), and the producer engine, all closed after
 * the file. Call at the top level of a test file.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll } from 'vitest';
import type { Engine } from '../../../src/index.js';
import {
  prepareLedger,
  producerEngine,
  sqlPool,
  type ClusterOptions,
} from '../../support/processes/cluster.js';
import { startLocalPostgres, type LocalPostgres } from '../../support/services/local-services.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../../support/services/services.js';

/** What {@link ownPostgres} gives a test file. */
export interface OwnPostgres {
  options: ClusterOptions;
  /** A pool on the test's own server (survives its restarts). */
  engineDb: pg.Pool;
  ledgerDb: pg.Pool;
  /** Fast shutdown (every client disconnected), then the same data directory on the same port. */
  restart(): Promise<void>;
  /** Immediate shutdown (a crash: WAL buffers lost, crash recovery at start), then the same. */
  crash(): Promise<void>;
  /** The producer engine in the test process, on the cluster's queue (closed after the file). */
  producer(): Promise<Engine>;
}

/**
 * Starts the file's own PostgreSQL. `queue`: where the cluster's jobs go (BullMQ on the shared Redis, or on this
 * server); `durableCommits`: `synchronous_commit` on, as in production (see {@link startLocalPostgres}).
 */
export async function ownPostgres(setup: {
  queue: 'redis' | 'postgres';
  durableCommits?: boolean;
}): Promise<OwnPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-pg-'));
  // The postgres user must be able to reach its data directory below this one.
  chmodSync(dir, 0o755);
  const durableCommits = setup.durableCommits ?? false;
  let postgres: LocalPostgres = await startLocalPostgres(join(dir, 'pg'), { durableCommits });
  const port = Number(new URL(postgres.url).port);
  afterAll(async () => {
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const ledgerUrl = await createTestDatabase();
  await prepareLedger(ledgerUrl);
  const options: ClusterOptions = {
    databaseUrl: postgres.url,
    queue: setup.queue,
    ...(setup.queue === 'redis' ? { redisUrl: testRedisUrl() } : {}),
    prefix: testQueuePrefix(),
    ledgerUrl,
    leaseMs: 2_000,
  };
  const engineDb = sqlPool(postgres.url);
  const ledgerDb = sqlPool(ledgerUrl);
  const engines: Engine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await engineDb.end();
    await ledgerDb.end();
  });
  const startAgain = async (): Promise<void> => {
    postgres = await startLocalPostgres(join(dir, 'pg'), { port, durableCommits });
  };
  return {
    options,
    engineDb,
    ledgerDb,
    restart: async () => {
      await postgres.stop(); // SIGINT: fast shutdown
      await startAgain();
    },
    crash: async () => {
      await postgres.crash(); // SIGQUIT: immediate shutdown
      await startAgain();
    },
    producer: async () => {
      const engine = await producerEngine(options);
      engines.push(engine);
      return engine;
    },
  };
}
