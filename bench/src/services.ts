/**
 * The benchmark's own servers: a durable PostgreSQL 15 (fsync and synchronous_commit ON, unlike the tests'
 * throwaway server; pg_stat_statements preloaded for the statement counts) and a Redis, both on free loopback
 * ports under a temporary directory. Redis and the helpers come from test/support/services/local-services.ts; PostgreSQL
 * is started here because that module's server is fsync-off by design and takes no settings.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import {
  findPostgresBinDir,
  freePort,
  startLocalRedis,
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

/** A running benchmark PostgreSQL. */
export interface BenchPostgres extends LocalServer {
  /** URL of the `postgres` database (the harness's own, for admin and counters). */
  url: string;
  port: number;
  dataDir: string;
  /** The settings it was started with (POSTGRES_SETTINGS plus extras). */
  settings: Record<string, string>;
}

const isRoot = process.getuid?.() === 0;

function postgresIds(): { uid: number; gid: number } | undefined {
  if (!isRoot) return undefined;
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  if (!uid || !gid)
    throw new Error('running as root but there is no "postgres" user: apt-get install postgresql');
  return { uid: Number(uid), gid: Number(gid) };
}

async function waitForPostgres(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr()}`);
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`postgres did not accept connections within 60 s: ${stderr()}`);
}

/**
 * Starts (or restarts, when `dir` already holds a data directory) a durable PostgreSQL under `dir`. `extra`
 * settings are added to {@link POSTGRES_SETTINGS} (W6 restarts with track_commit_timestamp=on).
 */
export async function startBenchPostgres(
  dir: string,
  options: { port?: number; extra?: Record<string, string> } = {},
): Promise<BenchPostgres> {
  const bin = findPostgresBinDir();
  const ids = postgresIds();
  mkdirSync(dir, { recursive: true });
  if (ids) chownSync(dir, ids.uid, ids.gid);
  const dataDir = join(dir, 'data');
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    const args = ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'];
    const result = spawnSync(join(bin, 'initdb'), args, { encoding: 'utf8', cwd: dir, ...ids });
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.stdout}`);
  }
  const port = options.port ?? (await freePort());
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    ...POSTGRES_SETTINGS,
    ...options.extra,
  };
  const args = ['-D', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child = spawn(join(bin, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir, ...ids });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitForPostgres(url, child, () => stderr);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGINT'); // fast shutdown
    });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query('create extension if not exists pg_stat_statements');
    await admin.query('create extension if not exists pg_walinspect');
  } finally {
    await admin.end();
  }
  return { url, port, dataDir, settings, pid: child.pid ?? 0, stop };
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
