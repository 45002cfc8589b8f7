/**
 * W1–W3 as the peers and the BullMQ floors measure them, each on its own system: W1 one sequence of 20 steps
 * (ms per step), W2 `scale.w2Invocations` concurrent sequences of 5 (steps/s), W3 50 parallel steps of 200 ms then
 * a join (ms); with `counters`, the database's counters per step of W1 and W2.
 */
import type { Scale } from '../context.js';
import { repeat, type SuiteResult } from '../measure.js';
import type { PgCounters } from '../pg-counters.js';

/** The workloads' sizes, as agentloom's apps have them (src/agentloom/apps.ts, not imported: it loads agentloom). */
export const W1_STEPS = 20;
export const W2_STEPS = 5;
export const W3_BRANCHES = 50;
export const W3_SLEEP_MS = 200;

/** How one system runs the workloads, and how its figures describe them. */
export interface Workloads {
  /** Runs one sequence of `steps` steps to its end. */
  sequence(steps: number): Promise<unknown>;
  /** Runs `branches` parallel sleeping steps, then the join, to its end. */
  fanOut(branches: number): Promise<unknown>;
  notes: { w1: string; w2: string; w3: string };
}

/**
 * Measures W1–W3 of `work` into the figures of a new result of `suite` (and, with `counters`, into its counts).
 */
export async function measureWorkloads(
  scale: Scale,
  suite: Pick<SuiteResult, 'suite' | 'label' | 'kind'>,
  work: Workloads,
  counters?: PgCounters,
): Promise<SuiteResult> {
  const result: SuiteResult = { ...suite, figures: {}, counts: counters ? {} : undefined, errors: [] };
  const counts = result.counts;
  const opts = { warmup: scale.warmup, runs: scale.runs };
  let window = await counters?.begin();
  const w1Opts = { ...opts, runs: scale.w1Runs };
  result.figures.w1 = await repeat({ ...w1Opts, unit: 'ms/step', note: work.notes.w1 }, async () => {
    const started = performance.now();
    await work.sequence(W1_STEPS);
    return (performance.now() - started) / W1_STEPS;
  });
  if (counters && window && counts)
    counts.w1 = await counters.end(window, (w1Opts.warmup + w1Opts.runs) * W1_STEPS);
  window = await counters?.begin();
  result.figures.w2 = await repeat({ ...opts, unit: 'steps/s', note: work.notes.w2 }, async () => {
    const started = performance.now();
    await Promise.all(Array.from({ length: scale.w2Invocations }, () => work.sequence(W2_STEPS)));
    return (scale.w2Invocations * W2_STEPS) / ((performance.now() - started) / 1000);
  });
  if (counters && window && counts)
    counts.w2 = await counters.end(window, (opts.warmup + opts.runs) * scale.w2Invocations * W2_STEPS);
  result.figures.w3 = await repeat({ ...opts, unit: 'ms', note: work.notes.w3 }, async () => {
    const started = performance.now();
    await work.fanOut(W3_BRANCHES);
    return performance.now() - started;
  });
  return result;
}
