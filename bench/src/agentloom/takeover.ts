/**
 * W4: seconds from SIGKILL of the worker holding a step to the step running on the other worker. Two
 * `agentloom worker` processes (BullMQ on Redis); the `holder` leaf sleeps; the holder process is found through
 * `nodes.lease_owner` (`host:pid:id`); after the kill the harness polls `nodes` every 10 ms until the attempt
 * (the fencing token) went up under another owner: the new worker has claimed the step and runs it. Measured with
 * agentloom's default lease (15 s) and with a short one; the killed worker is replaced between repetitions.
 */
import pg from 'pg';
import type { BenchContext } from '../context.js';
import { summarize, waitFor, wallMs, type SuiteResult } from '../measure.js';
import { openMode, type ModeTarget } from './modes.js';

interface Holder {
  attempt: number;
  owner: string;
  pid: number;
}

async function holder(db: pg.Client, invocationId: string): Promise<Holder | undefined> {
  const { rows } = await db.query<{ attempt: number; lease_owner: string | null; status: string }>(
    `select attempt, lease_owner, status from nodes where invocation_id = $1 and agent = 'holder'`,
    [invocationId],
  );
  const row = rows[0];
  if (!row?.lease_owner || row.attempt < 1) return undefined;
  const pid = /:(\d+):[^:]*$/.exec(row.lease_owner);
  return { attempt: row.attempt, owner: row.lease_owner, pid: pid ? Number(pid[1]) : -1 };
}

/** One takeover; returns seconds from the kill to the claim elsewhere. */
async function takeoverOnce(
  target: ModeTarget,
  db: pg.Client,
): Promise<{ seconds: number; attempts: string }> {
  const { invocationId } = await target.engine.enqueue({ app: 'holder', userId: 'bench', input: 'hold' });
  const held = await waitFor(() => holder(db, invocationId), {
    timeoutMs: 60_000,
    intervalMs: 10,
    what: 'a worker to claim the holder step',
  });
  const victim = target.workers.find((w) => w.pid === held.pid);
  if (!victim) throw new Error(`lease owner ${held.owner} is none of the workers`);
  victim.child.kill('SIGKILL');
  const killedAt = wallMs();
  const claimed = await waitFor(
    async () => {
      const now = await holder(db, invocationId);
      return now && now.attempt > held.attempt && now.pid !== held.pid ? now : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 10, what: 'another worker to claim the step' },
  );
  const seconds = (wallMs() - killedAt) / 1000;
  await victim.kill();
  await target.engine.cancel(invocationId);
  // Keep two live workers for the next repetition.
  target.workers.splice(target.workers.indexOf(victim), 1);
  await target.spawnWorker?.();
  return { seconds, attempts: `${held.attempt}→${claimed.attempt}` };
}

/** Runs W4 with the default lease and with `scale.w4ShortLeaseMs`. */
export async function runTakeover(ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const result: SuiteResult = {
    suite: 'w4',
    label: 'W4: takeover after SIGKILL (2 worker processes, BullMQ/Redis)',
    kind: 'extra',
    figures: {},
    extra: {},
    errors: [],
  };
  const configs = [
    { name: 'defaultLease', leaseMs: undefined, reps: scale.w4DefaultLeaseReps, lease: 15_000 },
    {
      name: 'shortLease',
      leaseMs: scale.w4ShortLeaseMs,
      reps: scale.w4ShortLeaseReps,
      lease: scale.w4ShortLeaseMs,
    },
  ];
  for (const config of configs) {
    if (config.reps === 0) continue;
    const target = await openMode('pg-redis-2', ctx, {
      leaseMs: config.leaseMs,
      database: `al_w4_${config.lease}`,
    });
    const db = new pg.Client({ connectionString: target.databaseUrl });
    await db.connect();
    try {
      const runs: { seconds: number; attempts: string }[] = [];
      for (let i = 0; i < config.reps; i++) runs.push(await takeoverOnce(target, db));
      (result.extra as Record<string, unknown>)[config.name] = {
        leaseMs: config.lease,
        ...summarize(runs.map((r) => r.seconds)),
        unit: 's',
        runs,
      };
    } finally {
      await db.end();
      await target.close();
    }
  }
  return result;
}
