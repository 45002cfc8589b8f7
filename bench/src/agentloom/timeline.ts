/**
 * Where a W1 run's time goes, timed: `runs` W1 invocations after the measured ones, each cut into four stretches
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
import { W1_STEPS } from './apps.js';

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

/** Times `runs` W1 invocations on `engine`, whose database is `databaseUrl`. */
export async function w1Timeline(engine: Engine, databaseUrl: string, runs: number): Promise<W1Timeline> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const samples: Omit<W1Timeline, 'runs' | 'steps'>[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const started = wallNow();
      const { invocationId } = await engine.enqueue({ app: 'seq20', userId: 'bench', input: 'go' });
      const enqueued = wallNow();
      const done = await engine.wait(invocationId, { timeoutMs: 600_000 });
      const settled = wallNow();
      if (done.status !== 'completed')
        throw new Error(`seq20 invocation ${invocationId} ended ${done.status}`);
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
