/**
 * Local PostgreSQL and Redis servers started from the machine's own binaries on free ports in a temporary
 * directory: the path tests and developers take when no DATABASE_URL / REDIS_URL is given and no Docker engine
 * answers. Used by the vitest global setup and by scripts/services.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

/** A server this process started. */
export interface LocalServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The directory holding `initdb` and `postgres`: PATH first, then Debian's /usr/lib/postgresql/N/bin. */
export function findPostgresBinDir(): string {
  const onPath = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) {
    const dir = onPath.slice(0, onPath.lastIndexOf('/'));
    if (existsSync(join(dir, 'postgres'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) {
    throw new Error(
      'PostgreSQL server binaries not found: install them (apt-get install postgresql) or set DATABASE_URL',
    );
  }
  return join(root, versions[0], 'bin');
}

const isRoot = process.getuid?.() === 0;

/**
 * When we are root, the uid/gid to run PostgreSQL as (it refuses to run as root). Spawning with uid/gid directly,
 * rather than through runuser, lets signals reach the server itself.
 */
function postgresIds(): { uid: number; gid: number } | undefined {
  if (!isRoot) return undefined;
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  if (!uid || !gid)
    throw new Error('running as root but there is no "postgres" user: apt-get install postgresql');
  return { uid: Number(uid), gid: Number(gid) };
}

function ownByPostgres(dir: string): void {
  const ids = postgresIds();
  if (ids) chownSync(dir, ids.uid, ids.gid);
}

async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

/** Stops a server with `signal`, escalating to SIGKILL when it has not exited after `graceMs`. */
function stopper(child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
}

/** A PostgreSQL started by {@link startLocalPostgres}. */
export interface LocalPostgres extends LocalServer {
  port: number;
  dataDir: string;
  /** The settings it was started with (`-c name=value`). */
  settings: Record<string, string>;
  /**
   * Crashes the server: an immediate shutdown (SIGQUIT), whose processes exit without writing what is still in
   * PostgreSQL's WAL buffers; the next start runs crash recovery. What was committed synchronously survives (it
   * reached the kernel before the commit returned); asynchronous commits of the last few hundred ms may not.
   */
  crash(): Promise<void>;
}

/**
 * Starts a throwaway PostgreSQL (trust auth, fsync off: test data only) under `dir`, on a free port or on
 * `options.port`. A data directory already initialised under `dir` is reused, so a stopped server can be started
 * again with its data on the same port (a database restart as its clients see it). Commits are asynchronous
 * (speed) unless `durableCommits`: then `synchronous_commit` is PostgreSQL's default (on), as in production, for
 * tests that crash the server (fsync stays off: a server crash, unlike a machine's, keeps what the kernel has).
 * `settings` are added last (the bench's durable server sets fsync and its own sizes); `readyTimeoutMs` bounds the
 * start (30 s) and `stopGraceMs` a stop before SIGKILL (10 s).
 */
export async function startLocalPostgres(
  dir: string,
  options: {
    port?: number;
    durableCommits?: boolean;
    settings?: Record<string, string>;
    readyTimeoutMs?: number;
    stopGraceMs?: number;
  } = {},
): Promise<LocalPostgres> {
  const bin = findPostgresBinDir();
  mkdirSync(dir, { recursive: true });
  ownByPostgres(dir);
  const dataDir = join(dir, 'data');
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    const initArgs = ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'];
    const result = spawnSync(join(bin, 'initdb'), initArgs, { encoding: 'utf8', cwd: dir, ...postgresIds() });
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.stdout}`);
  }
  const port = options.port ?? (await freePort());
  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    max_connections: '400',
    fsync: 'off',
    synchronous_commit: options.durableCommits ? 'on' : 'off',
    full_page_writes: 'off',
    shared_buffers: '128MB',
    ...options.settings,
  };
  const args = ['-D', dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child = spawn(join(bin, 'postgres'), args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: dir,
    ...postgresIds(),
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined);
        await client.connect();
        await client.end();
        return true;
      },
      'postgres',
      options.readyTimeoutMs,
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`could not start postgres: ${String(err)}\n${stderr}`);
  }
  // SIGINT = "fast shutdown": disconnect clients, then exit cleanly. SIGQUIT = "immediate shutdown": a crash.
  return {
    url,
    port,
    dataDir,
    settings,
    pid: child.pid ?? 0,
    stop: stopper(child, 'SIGINT', options.stopGraceMs),
    crash: stopper(child, 'SIGQUIT', options.stopGraceMs),
  };
}

/**
 * Starts a throwaway redis-server (no persistence) under `dir`, on a free port or on `options.port` (to restart a
 * killed server where its clients expect it).
 */
export async function startLocalRedis(dir: string, options: { port?: number } = {}): Promise<LocalServer> {
  const binary = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!binary)
    throw new Error('redis-server not found: install it (apt-get install redis-server) or set REDIS_URL');
  mkdirSync(dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const conf = join(dir, 'redis.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      'save ""',
      'appendonly no',
      `dir ${dir}`,
      'maxmemory-policy noeviction',
    ].join('\n'),
  );
  const child = spawn(binary, [conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  await waitUntil(async () => {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
    return output.includes('Ready to accept connections');
  }, 'redis-server');
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid ?? 0, stop: stopper(child, 'SIGTERM') };
}
