/**
 * A cluster of real `agentloom worker` processes for the distributed e2e suite: spawn, kill, stop and restart
 * workers; a killer loop; a producer engine in the test process; the ledger audits that turn "what happened
 * across crashes" into assertions; history normalisation for comparing runs.
 *
 * Every worker a test spawns is SIGKILLed after that test (even a stopped one), and when the test failed the
 * tail of each worker's log (stdout + stderr, kept in a temp file) is printed. Logs are removed after a file
 * whose tests all passed, unless AGENTLOOM_KEEP_WORKER_LOGS is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { createEngine, type AppDefinition, type Engine, type Event } from '../../src/index.js';
import { apps } from '../e2e/fixtures/distributed-apps.js';
import { LEDGER_DDL } from '../e2e/fixtures/ledger.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from './services.js';
import { waitFor } from './wait-for.js';

const REPO = resolve(import.meta.dirname, '../..');
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
  const served = options.appsModule
    ? ((await import(options.appsModule)) as { apps: AppDefinition[] }).apps
    : apps;
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

/** A step's node row: its fencing attempt and the pid in its lease owner (`host:pid:random`). */
export interface NodeLease {
  path: string;
  attempt: number;
  status: string;
  owner: string | null;
  pid: number | undefined;
}

/** The node of `agent` (an agent that runs once per invocation) in an invocation. */
export async function nodeLease(
  db: pg.Pool,
  invocationId: string,
  agent: string,
): Promise<NodeLease | undefined> {
  const { rows } = await db.query<{
    path: string;
    attempt: number;
    status: string;
    lease_owner: string | null;
  }>('SELECT path, attempt, status, lease_owner FROM nodes WHERE invocation_id = $1 AND agent = $2', [
    invocationId,
    agent,
  ]);
  const row = rows[0];
  if (!row) return undefined;
  const pid = row.lease_owner ? Number(row.lease_owner.split(':')[1]) : undefined;
  return { path: row.path, attempt: row.attempt, status: row.status, owner: row.lease_owner, pid };
}

/** What the fixture ledger says about the tool calls of some invocations, against the stored responses. */
export interface ToolAudit {
  /** Stored function responses (one per call id, unless duplicated). */
  storedResponses: number;
  /** Call keys with more than one stored response. */
  duplicatedResponses: string[];
  /** Distinct idempotency keys in the ledger. */
  keys: number;
  /** Executions counted by the ledger (≥ keys: re-runs of interrupted calls). */
  executions: number;
  keysWithoutResponse: string[];
  responsesWithoutKey: string[];
  /** Keys whose effect was applied more than once (more than one ledger row: the ledger lost its dedupe). */
  doubleEffects: string[];
  /** Executions that started after their call's response was stored: a stored call executed again. */
  executionsAfterStored: { key: string; startedMs: number; storedMs: number }[];
}

/** Compares the ledger's keys with the function responses stored for `invocationIds` (engine database). */
export async function auditToolCalls(
  engineDb: pg.Pool,
  ledgerDb: pg.Pool,
  invocationIds: string[],
): Promise<ToolAudit> {
  const stored = await engineDb.query<{ key: string; n: number; stored_ms: string }>(
    `SELECT e.invocation_id || ':' || (p -> 'functionResponse' ->> 'id') AS key, count(*)::int AS n,
            (extract(epoch FROM min(e.created_at)) * 1000)::bigint AS stored_ms
       FROM events e, jsonb_array_elements(e.content -> 'parts') p
      WHERE e.invocation_id = ANY($1) AND p ? 'functionResponse'
      GROUP BY 1`,
    [invocationIds],
  );
  const ledger = await ledgerDb.query<{ key: string; executions: number; rows: number }>(
    `SELECT key, sum(executions)::int AS executions, count(*)::int AS rows FROM e2e_tool_ledger
      WHERE split_part(key, ':', 1) = ANY($1) GROUP BY key`,
    [invocationIds],
  );
  const runs = await ledgerDb.query<{ key: string; started_ms: string }>(
    "SELECT key, started_ms FROM e2e_tool_runs WHERE split_part(key, ':', 1) = ANY($1)",
    [invocationIds],
  );
  const storedByKey = new Map(stored.rows.map((r) => [r.key, r]));
  const ledgerKeys = new Set(ledger.rows.map((r) => r.key));
  return {
    storedResponses: stored.rows.length,
    duplicatedResponses: stored.rows.filter((r) => r.n > 1).map((r) => r.key),
    keys: ledgerKeys.size,
    executions: ledger.rows.reduce((sum, r) => sum + r.executions, 0),
    doubleEffects: ledger.rows.filter((r) => r.rows > 1).map((r) => r.key),
    keysWithoutResponse: [...ledgerKeys].filter((k) => !storedByKey.has(k)),
    responsesWithoutKey: [...storedByKey.keys()].filter((k) => !ledgerKeys.has(k)),
    executionsAfterStored: runs.rows.flatMap((r) => {
      const s = storedByKey.get(r.key);
      return s && Number(r.started_ms) > Number(s.stored_ms)
        ? [{ key: r.key, startedMs: Number(r.started_ms), storedMs: Number(s.stored_ms) }]
        : [];
    }),
  };
}

/** Model calls made (fixture ledger) against model events stored and takeovers, per invocation and agent. */
export interface ModelAudit {
  calls: number;
  modelEvents: number;
  /** Σ (attempt − 1) over the leaf nodes: how many times a step was claimed again. */
  reclaims: number;
  /** Groups where calls − events exceeds the reclaims of that agent's nodes (a stored call made again). */
  violations: { run: string; agent: string; calls: number; events: number; reclaims: number }[];
}

/**
 * Audits model calls of the runs (run tag → invocation id). Model events are the stored model-role events but
 * the engine's own `adk_request_confirmation` calls (which no model made).
 */
export async function auditModelCalls(
  engineDb: pg.Pool,
  ledgerDb: pg.Pool,
  runs: Map<string, string>,
): Promise<ModelAudit> {
  const ids = [...runs.values()];
  const calls = await ledgerDb.query<{ run: string; agent: string; n: number }>(
    'SELECT run, agent, count(*)::int AS n FROM e2e_model_calls WHERE run = ANY($1) GROUP BY 1, 2',
    [[...runs.keys()]],
  );
  const events = await engineDb.query<{ invocation_id: string; author: string; n: number }>(
    `SELECT invocation_id, author, count(*)::int AS n FROM events
      WHERE invocation_id = ANY($1) AND content ->> 'role' = 'model'
        AND NOT content @> '{"parts": [{"functionCall": {"name": "adk_request_confirmation"}}]}' GROUP BY 1, 2`,
    [ids],
  );
  const nodes = await engineDb.query<{ invocation_id: string; agent: string; reclaims: number }>(
    `SELECT invocation_id, agent, sum(greatest(attempt - 1, 0))::int AS reclaims FROM nodes
      WHERE invocation_id = ANY($1) GROUP BY 1, 2`,
    [ids],
  );
  const eventsOf = new Map(events.rows.map((r) => [`${r.invocation_id}/${r.author}`, r.n]));
  const reclaimsOf = new Map(nodes.rows.map((r) => [`${r.invocation_id}/${r.agent}`, r.reclaims]));
  const violations: ModelAudit['violations'] = [];
  for (const row of calls.rows) {
    const id = `${runs.get(row.run)}/${row.agent}`;
    const stored = eventsOf.get(id) ?? 0;
    const reclaims = reclaimsOf.get(id) ?? 0;
    if (row.n - stored > reclaims || row.n < stored) {
      violations.push({ run: row.run, agent: row.agent, calls: row.n, events: stored, reclaims });
    }
  }
  return {
    calls: calls.rows.reduce((s, r) => s + r.n, 0),
    modelEvents: events.rows.reduce((s, r) => s + r.n, 0),
    reclaims: nodes.rows.reduce((s, r) => s + r.reclaims, 0),
    violations,
  };
}

/**
 * A run's history without ids, seqs and timestamps: one line per event with its author and its parts (text,
 * function call name + args, function response name + response), in order.
 */
export function normalizeHistory(events: Event[]): string[] {
  return events.map((e) => {
    const parts = (e.content?.parts ?? []).map((p) => {
      if (p.functionCall) return `call ${p.functionCall.name}(${JSON.stringify(p.functionCall.args ?? {})})`;
      if (p.functionResponse) {
        return `response ${p.functionResponse.name} ${JSON.stringify(p.functionResponse.response ?? {})}`;
      }
      return `text ${JSON.stringify(p.text ?? '')}`;
    });
    const flags = [e.actions.escalate ? 'escalate' : '', e.actions.endOfAgent ? 'end' : ''].filter(Boolean);
    return `${e.author}${e.branch ? `@${e.branch}` : ''}: ${parts.join(' | ') || '-'}${flags.length ? ` [${flags.join(',')}]` : ''}`;
  });
}

/** The stored events of one invocation, in order, normalised (the user's input line included). */
export async function invocationHistory(engine: Engine, invocationId: string): Promise<string[]> {
  const events: Event[] = [];
  for await (const event of engine.events(invocationId)) events.push(event);
  return normalizeHistory(events);
}

/** A moment the fixture marked (tool started, signal fired…) for the calls of one invocation. */
export interface Mark {
  key: string;
  pid: number;
  atMs: number;
}

/** The marks `name` of an invocation's calls, oldest first. */
export async function marksOf(ledger: pg.Pool, name: string, invocationId: string): Promise<Mark[]> {
  const { rows } = await ledger.query<{ key: string; pid: number; at_ms: string }>(
    "SELECT key, pid, at_ms FROM e2e_marks WHERE name = $1 AND split_part(key, ':', 1) = $2 ORDER BY id",
    [name, invocationId],
  );
  return rows.map((r) => ({ key: r.key, pid: r.pid, atMs: Number(r.at_ms) }));
}

/** Waits until an invocation's calls have at least `count` marks `name`; returns them. */
export async function waitForMarks(
  ledger: pg.Pool,
  name: string,
  invocationId: string,
  { count = 1, timeoutMs = 30_000 } = {},
): Promise<Mark[]> {
  return waitFor(
    async () => {
      const found = await marksOf(ledger, name, invocationId);
      return found.length >= count ? found : undefined;
    },
    { timeoutMs, intervalMs: 20, what: `${count} "${name}" mark(s) of ${invocationId}` },
  );
}
