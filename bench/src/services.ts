/**
 * The benchmark's own servers: a durable PostgreSQL 15 (fsync and synchronous_commit ON, unlike the tests'
 * throwaway server; pg_stat_statements preloaded for the statement counts) and a Redis, both on free loopback
 * ports under a temporary directory. Both are test/support/services/local-services.ts's servers; PostgreSQL with
 * the benchmark's settings over that module's fsync-off ones.
 */
import pg from 'pg';
import {
  startLocalPostgres,
  startLocalRedis,
  type LocalPostgres,
  type LocalServer,
} from '../../test/support/services/local-services.js';

export { startLocalRedis, type LocalServer };

/** Settings of the benchmark server. Durability as in production: fsync, synchronous_commit, full pages. */
export const POSTGRES_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  shared_buffers: '256MB',
  max_connections: '400',
  // Checkpoints forced by WAL volume would land inside measured windows; the timed one (5 min) still runs.
  max_wal_size: '4GB',
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'top',
  'pg_stat_statements.max': '10000',
  track_io_timing: 'off',
});

/** A running benchmark PostgreSQL (`url`: the `postgres` database, the harness's own, for admin and counters). */
export type BenchPostgres = LocalPostgres;

/**
 * Starts (or restarts, when `dir` already holds a data directory) a durable PostgreSQL under `dir`: the tests'
 * local server with {@link POSTGRES_SETTINGS} over its own. `extra` settings are added to them (W6 restarts with
 * track_commit_timestamp=on).
 */
export async function startBenchPostgres(
  dir: string,
  options: { port?: number; extra?: Record<string, string> } = {},
): Promise<BenchPostgres> {
  const postgres = await startLocalPostgres(dir, {
    port: options.port,
    settings: { ...POSTGRES_SETTINGS, ...options.extra },
    readyTimeoutMs: 60_000,
    stopGraceMs: 20_000,
  });
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  try {
    await admin.query('create extension if not exists pg_stat_statements');
    await admin.query('create extension if not exists pg_walinspect');
  } finally {
    await admin.end();
  }
  return postgres;
}

/** `url` pointing at database `name` instead. */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates database `name` (dropping an old one) and returns its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name}" with (force)`);
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  return databaseUrl(adminUrl, name);
}
