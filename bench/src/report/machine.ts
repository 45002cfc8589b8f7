/**
 * The machine and versions a run happened on: CPU, memory, Node, PostgreSQL and Redis versions, the version of
 * every peer package as installed, and agentloom's commit.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { BENCH, REPO } from '../context.js';

/** Where the run happened. */
export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  node: string;
  postgres: string;
  redis: string;
  packages: Record<string, string>;
  agentloom: { version: string; commit: string; dirty: boolean };
}

/** The 1-, 5- and 15-minute load averages. */
export function loadAverage(): number[] {
  return loadavg().map((v) => Math.round(v * 100) / 100);
}

function packageVersion(name: string, root = BENCH): string {
  try {
    const pkg = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    };
    return pkg.version;
  } catch {
    return 'not installed';
  }
}

function run(command: string, args: string[], cwd = REPO): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function git(args: string[]): string {
  return run('git', args);
}

/** Reads the machine description (server versions from the running servers). */
export async function collectMachine(postgresUrl: string, redisUrl: string): Promise<Machine> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  const { rows } = await client.query<{ server_version: string }>('show server_version');
  await client.end();
  const redis = new Redis(redisUrl);
  const info = await redis.info('server');
  redis.disconnect();
  const agentloom = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  return {
    cpuModel: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: run('uname', ['-sr'], '/'),
    node: process.version,
    postgres: rows[0]?.server_version ?? 'unknown',
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
    packages: {
      '@dbos-inc/dbos-sdk': packageVersion('@dbos-inc/dbos-sdk'),
      '@langchain/langgraph': packageVersion('@langchain/langgraph'),
      '@langchain/langgraph-checkpoint-postgres': packageVersion('@langchain/langgraph-checkpoint-postgres'),
      '@langchain/core': packageVersion('@langchain/core'),
      'bullmq (floors)': packageVersion('bullmq'),
      'bullmq (agentloom)': packageVersion('bullmq', REPO),
      'pg (agentloom)': packageVersion('pg', REPO),
      '@electric-sql/pglite (agentloom)': packageVersion('@electric-sql/pglite', REPO),
      'drizzle-orm (agentloom)': packageVersion('drizzle-orm', REPO),
      'vega-lite': packageVersion('vega-lite'),
      vega: packageVersion('vega'),
    },
    agentloom: {
      version: agentloom.version,
      commit: git(['rev-parse', '--short', 'HEAD']),
      dirty: git(['status', '--porcelain', '--', 'src']) !== '',
    },
  };
}
