/**
 * W1–W3 for one agentloom mode, with database counters on PostgreSQL:
 *
 * 1. warm-up (one run of each workload);
 * 2. W1, W2, W3: `runs` measured runs each, every one inside a counter window (statements, write transactions,
 *    WAL bytes: immediate); after W1 and W2 the flushed statistics (commits, WAL syncs) are read after a quiet
 *    period, and an idle window at the end gives the background rate to subtract;
 * 3. the marginal statements of a leaf step: (statements of a 20-leaf run − those of a 5-leaf run) / 15, which
 *    removes what every invocation costs once (enqueue, wait, root node);
 * 4. pg-local only: a CPU profile of 10 W1 runs and one W2 run (not timed);
 * 5. PostgreSQL modes: where a W1 run's time goes (timeline.ts: `w1Runs` more W1 runs cut into stretches by
 *    timestamps), and where a step's round trips go (breakdown.ts: Redis commands and statements by kind, one
 *    W1 and one W2 run, not timed).
 *
 * In rounds (rounds.ts) the suite runs once per round; the flushed statistics (step 2's quiet periods), the
 * marginal step, the profile and the breakdown are measured in round 1 only (counts are deterministic).
 */
import type { BenchContext } from '../context.js';
import { repeat, type CountsPerStep, type SuiteResult } from '../measure.js';
import { laggedPerStep, PgCounters, type LaggedSnapshot } from '../pg-counters.js';
import { W1_STEPS, W2_STEPS } from './apps.js';
import { MODE_LABELS, openMode, type ModeName } from './modes.js';
import { cpuProfile } from './profile.js';
import { roundTrips } from './breakdown.js';
import { w1Timeline, w3Timeline } from './timeline.js';
import { seq5Alone, w1, w2, w3, W3_STEPS } from './workloads.js';

/** W1 runs the CPU profile of the in-process mode spans. */
const W1_PROFILE_RUNS = 10;

/** Runs W1–W3 (and counters, and a profile on pg-local) for `mode`. */
export async function runModeSuite(mode: ModeName, ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const result: SuiteResult = {
    suite: `agentloom-${mode}`,
    label: MODE_LABELS[mode],
    kind: 'agentloom',
    figures: {},
    errors: [],
  };
  const target = await openMode(mode, ctx);
  const counters = target.database ? await PgCounters.open(ctx.postgresUrl, target.database) : undefined;
  const { engine } = target;
  const once = ctx.round === 1;
  const slow = once ? counters : undefined;
  try {
    // 1. Warm-up: JIT, pools, prepared plans, the queue's connections.
    await w1(engine);
    await w2(engine, scale.w2Invocations);
    await w3(engine);

    const opts = { warmup: 0, runs: scale.runs };
    const counts: Record<string, CountsPerStep> = {};
    const flushed: LaggedSnapshot[] = [];
    if (slow) flushed.push(await slow.laggedAfterFlush());

    let window = await counters?.begin();
    result.figures.w1 = await repeat(
      { ...opts, runs: scale.w1Runs, unit: 'ms/step', note: 'one invocation of 20 leaves' },
      () => w1(engine),
    );
    if (counters && window) {
      counts.w1 = await counters.end(window, scale.w1Runs * W1_STEPS);
      if (slow) flushed.push(await slow.laggedAfterFlush());
    }

    window = await counters?.begin();
    result.figures.w2 = await repeat(
      { ...opts, unit: 'steps/s', note: `${scale.w2Invocations} concurrent invocations of 5 leaves` },
      () => w2(engine, scale.w2Invocations),
    );
    if (counters && window) {
      counts.w2 = await counters.end(window, scale.runs * scale.w2Invocations * W2_STEPS);
      if (slow) flushed.push(await slow.laggedAfterFlush());
    }

    window = await counters?.begin();
    result.figures.w3 = await repeat(
      { ...opts, unit: 'ms', note: '50 parallel leaves of 200 ms, then a join leaf' },
      () => w3(engine),
    );
    if (counters && window) counts.w3 = await counters.end(window, scale.runs * W3_STEPS);

    if (counters && !slow) result.counts = counts;
    if (slow) {
      const counters = slow;
      // 3. Marginal cost of one leaf step: 20-leaf runs minus 5-leaf runs, per extra leaf.
      window = await counters.begin();
      for (let i = 0; i < scale.runs; i++) await seq5Alone(engine);
      const seq5 = await counters.end(window, scale.runs * W2_STEPS);
      const w1Counts = counts.w1 as CountsPerStep;
      const perRun = (perStep: number, steps: number): number => perStep * steps;
      const marginal = (pick: (c: CountsPerStep) => number): number =>
        (perRun(pick(w1Counts), W1_STEPS) - perRun(pick(seq5), W2_STEPS)) / (W1_STEPS - W2_STEPS);
      result.extra = {
        ...result.extra,
        marginalLeafStep: {
          statements: marginal((c) => c.statements),
          statementsWithoutTxControl: marginal((c) => c.statementsWithoutTxControl),
          writeTransactions: marginal((c) => c.writeTransactions),
          walBytes: marginal((c) => c.walBytes),
          perInvocationOverhead: {
            statements: perRun(seq5.statements, W2_STEPS) - W2_STEPS * marginal((c) => c.statements),
            writeTransactions:
              perRun(seq5.writeTransactions, W2_STEPS) - W2_STEPS * marginal((c) => c.writeTransactions),
          },
        },
      };
      // The idle window: what the engine does with nothing to run, over the same quiet period.
      const idleFrom = await counters.laggedAfterFlush();
      const idleTo = await counters.laggedAfterFlush();
      const idle = { from: idleFrom, to: idleTo };
      const [f0, f1, f2] = flushed as [LaggedSnapshot, LaggedSnapshot, LaggedSnapshot];
      Object.assign(counts.w1 as CountsPerStep, laggedPerStep(f0, f1, idle, scale.w1Runs * W1_STEPS));
      Object.assign(
        counts.w2 as CountsPerStep,
        laggedPerStep(f1, f2, idle, scale.runs * scale.w2Invocations * W2_STEPS),
      );
      result.counts = counts;
      result.extra = {
        ...result.extra,
        idleCommitsPerSecond: ((idleTo.commits - idleFrom.commits) * 1000) / (idleTo.atMs - idleFrom.atMs),
      };
    }

    if (once && counters && target.database && target.databaseUrl) {
      result.extra = {
        ...result.extra,
        w1Timeline: await w1Timeline(engine, target.databaseUrl, scale.w1Runs),
        w3Timeline: await w3Timeline(engine, target.databaseUrl, scale.w1Runs),
        roundTrips: await roundTrips({ mode, target, counters, ctx }),
      };
    }

    if (once && mode === 'pg-local') {
      result.extra = {
        ...result.extra,
        // Several W1 runs: one run is ~25 ms, a few dozen samples, too few for a per-step CPU figure.
        profileW1: {
          ...(await cpuProfile(async () => {
            for (let i = 0; i < W1_PROFILE_RUNS; i++) await w1(engine);
          })),
          runs: W1_PROFILE_RUNS,
        },
        profileW2: await cpuProfile(() => w2(engine, scale.w2Invocations)),
      };
    }
  } finally {
    await counters?.close();
    await target.close();
  }
  return result;
}
