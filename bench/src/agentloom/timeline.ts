/**
 * Where a W1 run's time goes (and, below, a W3 run's), timed: `runs` W1 invocations after the measured ones, each cut into four stretches
 * by the bench process's clock and the timestamps PostgreSQL wrote (same machine, same clock):
 *
 * - **enqueue**: the `enqueue` call (its statement and, in a distributed mode, the job's add to the queue after
 *   the commit);
 * - **to the first leaf's commit**: from `enqueue` returning to the start of the first leaf's commit statement
 *   (its event's `created_at`: the statement's start, one statement a transaction). In a distributed mode: the
 *   job's trip to a worker, the root's claim there, the first leaf's run;
 * - **per leaf**: from the first leaf's commit to the last one's, per leaf after the first (a leaf's run and its
 *   commit; the next leaf was claimed by that commit);
 * - **last commit → `wait`**: from the start of the last leaf's commit statement (which ends the invocation) to
 *   `wait` resolving in the bench process: the commit itself, the end's notification to the bench process and
 *   `wait`'s one read.
 *
 * Each stretch is a median over the runs, so the four need not add up to the median total exactly.
 */
import pg from 'pg';
import type { Engine } from '../../../src/index.js';
import { W1_STEPS, W3_BRANCHES, W3_SLEEP_MS } from './apps.js';

/** Medians, in ms, over {@link W1Timeline.runs} W1 runs. */
export interface W1Timeline {
  runs: number;
  /** Leaves of each run. */
  steps: number;
  enqueueMs: number;
  toFirstCommitMs: number;
  perLeafMs: number;
  endToWaitMs: number;
  totalMs: number;
}

const wallNow = (): number => performance.timeOrigin + performance.now();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One completed run of `app`, with the bench clock before `enqueue`, after it, and when `wait` resolved. */
async function timedRun(
  engine: Engine,
  app: string,
): Promise<{ invocationId: string; started: number; enqueued: number; settled: number }> {
  const started = wallNow();
  const { invocationId } = await engine.enqueue({ app, userId: 'bench', input: 'go' });
  const enqueued = wallNow();
  const done = await engine.wait(invocationId, { timeoutMs: 600_000 });
  const settled = wallNow();
  if (done.status !== 'completed') throw new Error(`${app} invocation ${invocationId} ended ${done.status}`);
  return { invocationId, started, enqueued, settled };
}

/** Times `runs` W1 invocations on `engine`, whose database is `databaseUrl`. */
export async function w1Timeline(engine: Engine, databaseUrl: string, runs: number): Promise<W1Timeline> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const samples: Omit<W1Timeline, 'runs' | 'steps'>[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const { invocationId, started, enqueued, settled } = await timedRun(engine, 'seq20');
      // Read after the run, outside every timed stretch. A leaf's events share its commit's timestamp.
      const { rows } = await client.query<{ first: string; last: string; leaves: string; ended: string }>(
        `select extract(epoch from min(e.created_at)) * 1000 as first,
                extract(epoch from max(e.created_at)) * 1000 as last,
                count(distinct e.created_at) as leaves,
                (select extract(epoch from ended_at) * 1000 from invocations where id = $1) as ended
           from events e where e.invocation_id = $1 and e.author <> 'user'`,
        [invocationId],
      );
      const row = rows[0];
      if (!row || Number(row.leaves) !== W1_STEPS)
        throw new Error(
          `seq20 invocation ${invocationId}: events of ${row?.leaves ?? 0} commits, expected one per leaf (${W1_STEPS})`,
        );
      const first = Number(row.first);
      const last = Number(row.last);
      samples.push({
        enqueueMs: enqueued - started,
        toFirstCommitMs: first - enqueued,
        perLeafMs: (last - first) / (W1_STEPS - 1),
        endToWaitMs: settled - last,
        totalMs: settled - started,
      });
    }
  } finally {
    await client.end();
  }
  const pick = (key: keyof Omit<W1Timeline, 'runs' | 'steps'>): number => median(samples.map((s) => s[key]));
  return {
    runs,
    steps: W1_STEPS,
    enqueueMs: pick('enqueueMs'),
    toFirstCommitMs: pick('toFirstCommitMs'),
    perLeafMs: pick('perLeafMs'),
    endToWaitMs: pick('endToWaitMs'),
    totalMs: pick('totalMs'),
  };
}

/** Medians, in ms, over {@link W3Timeline.runs} W3 runs (see {@link w3Timeline}). */
export interface W3Timeline {
  runs: number;
  branches: number;
  sleepMs: number;
  /** The `enqueue` call. */
  enqueueMs: number;
  /** `enqueue` returning → the start of the statement that inserted the branches (the fan-out). */
  toFanOutMs: number;
  /** The fan-out statement's start → the last statement of branch ends, less the branches' sleep. */
  branchesMs: number;
  /** Statements the 50 branch ends were written in (median). */
  endStatements: number;
  /** The last branch ends' statement → the statement that ended the parallel and inserted the join. */
  toJoinMs: number;
  /** That statement → the join leaf's commit (the statement, the join's claim and run). */
  joinMs: number;
  /** The join leaf's commit (which ends the invocation) → `wait` resolving. */
  endToWaitMs: number;
  totalMs: number;
}

/**
 * Where a W3 run's time goes, timed like {@link w1Timeline}: `runs` `fan50` invocations, each cut by the bench
 * process's clock and the timestamps PostgreSQL wrote (a node's `created_at` and an event's are their statement's
 * start): the enqueue; to the fan-out (the job's trip, the root's and the parallel's advances); the branches (their
 * start, their 200 ms sleep, their timers, their ends gathered: less the sleep); the last branch ends' statement
 * to the join's insert (that statement, the parallel's end); the join (its statement, its run, its commit's start);
 * the end to `wait`.
 */
export async function w3Timeline(engine: Engine, databaseUrl: string, runs: number): Promise<W3Timeline> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const samples: Omit<W3Timeline, 'runs' | 'branches' | 'sleepMs'>[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const { invocationId, started, enqueued, settled } = await timedRun(engine, 'fan50');
      const { rows } = await client.query<Record<string, string | null>>(
        `select (select extract(epoch from min(created_at)) * 1000 from nodes
                  where invocation_id = $1 and agent ~ '^b[0-9]+$') as fan_out,
                (select count(*) from nodes where invocation_id = $1 and agent ~ '^b[0-9]+$') as branch_nodes,
                (select extract(epoch from created_at) * 1000 from nodes
                  where invocation_id = $1 and agent = 'join') as join_created,
                extract(epoch from max(created_at) filter (where author ~ '^b[0-9]+$')) * 1000 as last_ends,
                count(distinct created_at) filter (where author ~ '^b[0-9]+$') as end_statements,
                count(*) filter (where author ~ '^b[0-9]+$') as branch_events,
                extract(epoch from max(created_at) filter (where author = 'join')) * 1000 as join_commit
           from events where invocation_id = $1`,
        [invocationId],
      );
      const row = rows[0];
      if (
        !row ||
        Number(row.branch_nodes) !== W3_BRANCHES ||
        Number(row.branch_events) !== W3_BRANCHES ||
        row.join_created === null ||
        row.join_commit === null
      )
        throw new Error(
          `fan50 invocation ${invocationId}: ${row?.branch_nodes ?? 0} branch nodes and ${row?.branch_events ?? 0} ` +
            `branch events (expected ${W3_BRANCHES} each) and a join node and event`,
        );
      const fanOut = Number(row.fan_out);
      const lastEnds = Number(row.last_ends);
      const joinCreated = Number(row.join_created);
      const joinCommit = Number(row.join_commit);
      samples.push({
        enqueueMs: enqueued - started,
        toFanOutMs: fanOut - enqueued,
        branchesMs: lastEnds - fanOut - W3_SLEEP_MS,
        endStatements: Number(row.end_statements),
        toJoinMs: joinCreated - lastEnds,
        joinMs: joinCommit - joinCreated,
        endToWaitMs: settled - joinCommit,
        totalMs: settled - started,
      });
    }
  } finally {
    await client.end();
  }
  const pick = (key: keyof (typeof samples)[number]): number => median(samples.map((s) => s[key]));
  return {
    runs,
    branches: W3_BRANCHES,
    sleepMs: W3_SLEEP_MS,
    enqueueMs: pick('enqueueMs'),
    toFanOutMs: pick('toFanOutMs'),
    branchesMs: pick('branchesMs'),
    endStatements: pick('endStatements'),
    toJoinMs: pick('toJoinMs'),
    joinMs: pick('joinMs'),
    endToWaitMs: pick('endToWaitMs'),
    totalMs: pick('totalMs'),
  };
}
