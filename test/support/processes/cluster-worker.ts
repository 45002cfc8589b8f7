/**
 * One real `agentloom worker` process of the distributed e2e suite, and how workers reach their services
 * (ClusterOptions): spawned with its stdout and stderr in a log file, its "worker started" awaited, signalled,
 * killed. Every worker a test spawns is SIGKILLed after that test (even a stopped one), and when the test failed
 * the tail of each worker's log is printed. Logs are removed after a file whose tests all passed, unless
 * AGENTLOOM_KEEP_WORKER_LOGS is set. Groups of workers: cluster.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { waitFor } from '../assert/wait-for.js';

const REPO = resolve(import.meta.dirname, '../../..');
const CLI = join(REPO, 'bin/agentloom.js');
/** The apps module every worker of the suite loads. */
export const APPS_MODULE = join(REPO, 'test/e2e/fixtures/distributed-apps.ts');

/** How a cluster's workers reach their services. */
export interface ClusterOptions {
  databaseUrl: string;
  /** 'redis' (default) needs `redisUrl`; 'postgres' runs BullMQ on its PostgreSQL backend (no REDIS_URL). */
  queue?: 'redis' | 'postgres';
  redisUrl?: string;
  /** AGENTLOOM_QUEUE_PREFIX: isolates this file's queue. */
  prefix: string;
  /** Where the fixture's tools and models write their ledger. Default: the workers' DATABASE_URL. */
  ledgerUrl?: string;
  leaseMs?: number;
  graceMs?: number;
  concurrency?: number;
  /** LOG_LEVEL of the workers. Default 'info'. */
  logLevel?: string;
  /** The apps module the workers load (and the producer engine serves). Default {@link APPS_MODULE}. */
  appsModule?: string;
  /** More environment of the workers, e.g. where a scripted server of the test process listens. */
  env?: Record<string, string>;
}

/** How a worker process ended. */
export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  atMs: number;
}

const logDir = mkdtempSync(join(tmpdir(), 'agentloom-workers-'));
let anyFailed = false;
const spawnedInTest: WorkerProcess[] = [];
const everSpawned = new Set<ChildProcess>();

// Last resort when the test process itself goes away: no worker outlives it.
process.on('exit', () => {
  for (const child of everSpawned)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** One `agentloom worker` process with its log file. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly logPath: string;
  readonly exited: Promise<WorkerExit>;
  exit: WorkerExit | undefined;
  private startedSeen = false;

  constructor(
    readonly name: string,
    args: string[],
    env: NodeJS.ProcessEnv,
  ) {
    this.logPath = join(logDir, `${name}.log`);
    const fd = openSync(this.logPath, 'a');
    try {
      this.child = spawn(process.execPath, [CLI, 'worker', ...args], {
        cwd: REPO,
        env,
        stdio: ['ignore', fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    everSpawned.add(this.child);
    spawnedInTest.push(this);
    this.exited = new Promise((resolveExit) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal, atMs: Date.now() };
        everSpawned.delete(this.child);
        resolveExit(this.exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Still running (possibly stopped). */
  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Whether it has logged "worker started" (and not exited). */
  get started(): boolean {
    if (!this.startedSeen) this.startedSeen = this.logLines().some((l) => l.msg === 'worker started');
    return this.alive && this.startedSeen;
  }

  /** The log so far. */
  log(): string {
    try {
      return readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  /** The parsed JSON log lines so far (other lines skipped). */
  logLines(): Record<string, unknown>[] {
    return this.log()
      .split('\n')
      .flatMap((line) => {
        try {
          const parsed: unknown = JSON.parse(line);
          return typeof parsed === 'object' && parsed !== null ? [parsed as Record<string, unknown>] : [];
        } catch {
          return [];
        }
      });
  }

  /** The last `lines` lines of the log. */
  tail(lines = 40): string {
    return this.log()
      .split('\n')
      .slice(-lines - 1)
      .join('\n');
  }

  /** Resolves once the worker logged "worker started"; rejects (with its log) if it exits first. */
  async waitStarted(timeoutMs = 60_000): Promise<this> {
    await waitFor(
      () => {
        if (this.started) return true;
        if (!this.alive) {
          throw new Error(
            `worker ${this.name} exited (${JSON.stringify(this.exit)}) before starting:\n${this.tail()}`,
          );
        }
        return false;
      },
      { timeoutMs, intervalMs: 50, what: `worker ${this.name} to log "worker started"` },
    );
    return this;
  }

  /** Sends `signal` (no-op once exited). */
  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** SIGKILLs it and waits for the exit. */
  async kill(): Promise<WorkerExit> {
    this.signal('SIGKILL');
    return this.exited;
  }
}

afterEach(async (ctx) => {
  const workers = spawnedInTest.splice(0);
  const failed = ctx.task.result?.state === 'fail';
  if (failed) {
    anyFailed = true;
    for (const w of workers) {
      console.log(
        `---- ${w.name} (pid ${w.pid}, exit ${JSON.stringify(w.exit ?? null)}) ${w.logPath}\n${w.tail()}`,
      );
    }
  }
  // SIGKILL also ends a SIGSTOPped worker.
  await Promise.all(workers.map((w) => w.kill()));
});

afterAll(() => {
  if (anyFailed || process.env.AGENTLOOM_KEEP_WORKER_LOGS) console.log(`worker logs kept in ${logDir}`);
  else rmSync(logDir, { recursive: true, force: true });
});
