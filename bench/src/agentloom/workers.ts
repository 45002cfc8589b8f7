/**
 * `agentloom worker` processes for the distributed modes, spawned exactly as an operator would:
 * `node bin/agentloom.js worker --apps bench/src/agentloom/apps.ts --queue redis|postgres --concurrency 64` with
 * DATABASE_URL, REDIS_URL and AGENTLOOM_QUEUE_PREFIX in the environment (LOG_LEVEL at its default, info). Each
 * worker's output goes to a log file in the suite's work directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APPS_MODULE, REPO } from '../context.js';
import { waitFor } from '../measure.js';

/** How a group of workers reaches its services. */
export interface WorkerOptions {
  databaseUrl: string;
  queue: 'redis' | 'postgres';
  redisUrl?: string;
  prefix: string;
  logDir: string;
  concurrency?: number;
  leaseMs?: number;
  /** The apps module (default: the benchmark's). */
  apps?: string;
  /** More flags for `agentloom worker`. */
  args?: string[];
  /** Flags for node itself, before the script (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** More environment variables. */
  env?: Record<string, string>;
}

const everSpawned = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of everSpawned)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

let sequence = 0;

/** One worker process. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly logPath: string;
  readonly exited: Promise<void>;

  constructor(options: WorkerOptions) {
    this.logPath = join(options.logDir, `${options.prefix}-w${++sequence}.log`);
    const args = [
      ...(options.nodeArgs ?? []),
      join(REPO, 'bin/agentloom.js'),
      'worker',
      '--apps',
      options.apps ?? APPS_MODULE,
      '--queue',
      options.queue,
      '--concurrency',
      String(options.concurrency ?? 64),
    ];
    if (options.leaseMs !== undefined) args.push('--lease-ms', String(options.leaseMs));
    args.push(...(options.args ?? []));
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: options.databaseUrl };
    delete env.REDIS_URL;
    delete env.LOG_LEVEL;
    delete env.BENCH_CONTEXT;
    if (options.queue === 'redis') env.REDIS_URL = options.redisUrl;
    env.AGENTLOOM_QUEUE_PREFIX = options.prefix;
    Object.assign(env, options.env);
    const fd = openSync(this.logPath, 'a');
    try {
      this.child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    everSpawned.add(this.child);
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  log(): string {
    try {
      return readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  /** Resolves once the worker logged "worker started"; throws with its log tail when it exits first. */
  async started(timeoutMs = 120_000): Promise<this> {
    await waitFor(
      () => {
        if (this.log().includes('"msg":"worker started"')) return true;
        if (!this.alive)
          throw new Error(`worker ${this.pid} exited before starting:\n${this.log().slice(-3000)}`);
        return false;
      },
      { timeoutMs, intervalMs: 100, what: `worker ${this.pid} to start` },
    );
    return this;
  }

  /** Resident set size (bytes) from /proc/<pid>/status VmRSS. */
  rssBytes(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    if (!match) throw new Error(`no VmRSS in /proc/${this.pid}/status`);
    return Number(match[1]) * 1024;
  }

  /** SIGKILL, resolving when it has exited. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
    everSpawned.delete(this.child);
  }

  /** SIGTERM (graceful drain), then SIGKILL if it is still running after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.alive) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    this.child.kill('SIGTERM');
    await this.exited;
    clearTimeout(timer);
    everSpawned.delete(this.child);
  }
}

/** Starts `count` workers and waits until each has started. */
export async function startWorkers(count: number, options: WorkerOptions): Promise<WorkerProcess[]> {
  const workers = Array.from({ length: count }, () => new WorkerProcess(options));
  try {
    await Promise.all(workers.map((w) => w.started()));
  } catch (err) {
    await Promise.all(workers.map((w) => w.kill()));
    throw err;
  }
  return workers;
}
