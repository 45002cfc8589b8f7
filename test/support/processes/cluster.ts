/**
 * A cluster of real `agentloom worker` processes for the distributed e2e suite: spawn, kill, stop and restart
 * workers (one worker: cluster-worker.ts), and a killer loop. The other parts of the harness, re-exported here
 * for the suite's files: per-file services and a producer engine (cluster-services.ts), the ledger audits that
 * turn "what happened across crashes" into assertions (cluster-audits.ts), history normalisation for comparing
 * runs (run-history.ts).
 */
import type pg from 'pg';
import { APPS_MODULE, WorkerProcess, type ClusterOptions } from './cluster-worker.js';

export * from './cluster-worker.js';
export * from './cluster-services.js';
export * from './cluster-audits.js';
export * from '../assert/run-history.js';

/** Workers of one test sharing database, queue and prefix. */
export class Cluster {
  readonly workers: WorkerProcess[] = [];
  private seq = 0;

  constructor(readonly options: ClusterOptions) {
    if ((options.queue ?? 'redis') === 'redis' && !options.redisUrl) {
      throw new Error('cluster: a redis queue needs redisUrl');
    }
  }

  /** Spawns a worker (does not wait for it to start). */
  spawn(overrides: Partial<ClusterOptions> = {}): WorkerProcess {
    const o = { ...this.options, ...overrides };
    const queue = o.queue ?? 'redis';
    const args = ['--apps', o.appsModule ?? APPS_MODULE, '--queue', queue];
    if (o.concurrency !== undefined) args.push('--concurrency', String(o.concurrency));
    if (o.leaseMs !== undefined) args.push('--lease-ms', String(o.leaseMs));
    if (o.graceMs !== undefined) args.push('--grace-ms', String(o.graceMs));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ['DATABASE_URL', 'REDIS_URL', 'AGENTLOOM_E2E_LEDGER_URL']) delete env[key];
    env.DATABASE_URL = o.databaseUrl;
    if (queue === 'redis') env.REDIS_URL = o.redisUrl;
    env.AGENTLOOM_QUEUE_PREFIX = o.prefix;
    env.LOG_LEVEL = o.logLevel ?? 'info';
    if (o.ledgerUrl) env.AGENTLOOM_E2E_LEDGER_URL = o.ledgerUrl;
    Object.assign(env, o.env);
    const worker = new WorkerProcess(`${o.prefix}-w${++this.seq}`, args, env);
    this.workers.push(worker);
    return worker;
  }

  /** Spawns `n` workers and waits until each logged "worker started". */
  async start(n: number, overrides: Partial<ClusterOptions> = {}): Promise<WorkerProcess[]> {
    const started = Array.from({ length: n }, () => this.spawn(overrides));
    await Promise.all(started.map((w) => w.waitStarted()));
    return started;
  }

  /** Workers still running. */
  alive(): WorkerProcess[] {
    return this.workers.filter((w) => w.alive);
  }

  /** The worker with this pid. */
  byPid(pid: number): WorkerProcess | undefined {
    return this.workers.find((w) => w.pid === pid);
  }

  /** SIGKILLs every worker still running and waits for them to exit. */
  async killAll(): Promise<void> {
    await Promise.all(this.alive().map((w) => w.kill()));
  }
}

/** A kill made by the killer loop. */
export interface Kill {
  pid: number;
  atMs: number;
  /** Steps (leaf nodes running under its lease) the worker held when it died, when the killer was given a db. */
  heldSteps: number;
}

/** A running killer loop. */
export interface Killer {
  readonly kills: Kill[];
  /** Stops the loop and waits until every replacement worker has started. */
  stop(): Promise<Kill[]>;
}

/** Running steps whose lease `pid` holds. Right after a SIGKILL: what the dead worker was doing. */
export async function stepsHeldBy(db: pg.Pool, pid: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM nodes WHERE status = 'running' AND split_part(lease_owner, ':', 2) = $1",
    [String(pid)],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Every ~`everyMs` (±25 %), SIGKILLs a random started worker of `cluster` and spawns a replacement; with `db`
 * (the engine's database), also counts the steps the victim held. A tick is skipped while fewer than
 * `minStarted` workers are up: a worker takes seconds to start on a loaded machine (the CLI compiles the
 * TypeScript sources), and killing each replacement as it comes up would leave no worker at all. The timer is
 * only the chaos cadence; nothing waits on it for correctness.
 */
export function startKiller(
  cluster: Cluster,
  { everyMs = 2_000, db, minStarted = 2 }: { everyMs?: number; db?: pg.Pool; minStarted?: number } = {},
): Killer {
  const kills: Kill[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((resolveTick) => {
        const timer = setTimeout(resolveTick, everyMs * (0.75 + Math.random() * 0.5));
        wake = () => {
          clearTimeout(timer);
          resolveTick();
        };
      });
      if (stopped) break;
      const candidates = cluster.alive().filter((w) => w.started);
      const victim = candidates[Math.floor(Math.random() * candidates.length)];
      if (!victim || candidates.length < minStarted) continue;
      victim.signal('SIGKILL');
      const kill: Kill = { pid: victim.pid, atMs: Date.now(), heldSteps: 0 };
      kills.push(kill);
      cluster.spawn();
      // Its leases stay until they expire (nobody can take them over sooner), so this counts what it held.
      await victim.exited;
      if (db) kill.heldSteps = await stepsHeldBy(db, victim.pid).catch(() => 0);
    }
  })();
  return {
    kills,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      await Promise.all(cluster.alive().map((w) => w.waitStarted()));
      return kills;
    },
  };
}
