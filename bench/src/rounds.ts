/**
 * Rounds: the comparison suites (floors, peers, agentloom's modes, the scaling suite) run `rounds` times,
 * interleaved (floor, DBOS, …, agentloom modes, floor, DBOS, …), each run a fresh process, so a disk or GC swing
 * during one run moves one round of one system, not a whole ratio. This module plans that order and merges a
 * suite's rounds into one result:
 *
 * - warm-up rounds (numbered 0, −1, …; `Scale.warmupRounds`) run first and count for nothing: their results are
 *   kept in `roundResults` (marked `warmup`) and in no figure, counter or extra;
 * - a figure's `median` is the median of the rounds' medians, `min`/`max` the lowest and highest round median,
 *   `rounds` every round's median in order with `roundNumbers` the round of each (a ratio pairs a round of one
 *   system with the same round of the other, report/spread.ts), `samples` every measured run of every round;
 * - counters, the marginal step and the other extras come from the first round that has them (round 1 measures
 *   the slow counters and the profiles; counts are deterministic, so one round is enough);
 * - errors of any round are kept, prefixed with the round; a failed round adds no figure.
 */
import type { Figure, FigureKey, SuiteResult } from './measure.js';
import { summarize } from './measure.js';

/** The suites that run once per round, interleaved, in this order within a round. */
export const ROUND_SUITES: readonly string[] = [
  'floor-commit',
  'floor-bullmq',
  'floor-bullmq-upsert',
  'dbos',
  'langgraph',
  'agentloom-pglite',
  'agentloom-pg-local',
  'agentloom-pg-redis-1',
  'agentloom-pg-redis-2',
  'agentloom-pg-pgqueue-1',
  'scaling-redis',
];

/** One suite run of the plan. */
export interface PlannedRun {
  name: string;
  round: number;
}

/**
 * The order of the runs: every round suite of `names` once per round (interleaved; the `warmupRounds` first,
 * numbered from 1 − warmupRounds to 0), then the others once, each in `names` order.
 */
export function planRuns(names: string[], rounds: number, warmupRounds = 0): PlannedRun[] {
  const inRounds = names.filter((n) => ROUND_SUITES.includes(n));
  const once = names.filter((n) => !ROUND_SUITES.includes(n));
  const plan: PlannedRun[] = [];
  const first = inRounds.length > 0 ? 1 - warmupRounds : 1;
  for (let round = first; round <= rounds; round++) for (const name of inRounds) plan.push({ name, round });
  for (const name of once) plan.push({ name, round: 1 });
  return plan;
}

/** Whether a result is of a warm-up round (never measured). */
export function isWarmup(result: Pick<SuiteResult, 'round'>): boolean {
  return result.round !== undefined && result.round < 1;
}

function mergeFigure(figures: { figure: Figure; round: number }[]): Figure {
  const first = (figures[0] as { figure: Figure }).figure;
  if (figures.length === 1) return { ...first, roundNumbers: figures.map((f) => f.round) };
  const medians = figures.map((f) => f.figure.median);
  const { median, min, max } = summarize(medians);
  return {
    median,
    min,
    max,
    samples: figures.flatMap((f) => f.figure.samples),
    rounds: medians,
    roundNumbers: figures.map((f) => f.round),
    unit: first.unit,
    note: first.note,
  };
}

/** Merges one suite's results of several rounds (in round order, warm-up rounds first) into one. */
export function mergeRounds(all: SuiteResult[]): SuiteResult {
  const results = all.filter((r) => !isWarmup(r));
  const first = results[0];
  if (!first) throw new Error('mergeRounds: no measured round');
  if (all.length === 1) return { ...first, round: undefined };
  const figures: SuiteResult['figures'] = {};
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.figures) as FigureKey[]))];
  for (const w of keys) {
    const of = results.flatMap((r, index) => {
      const figure = r.figures[w];
      return figure ? [{ figure, round: r.round ?? index + 1 }] : [];
    });
    if (of.length > 0) figures[w] = mergeFigure(of);
  }
  const withCounts = results.find((r) => r.counts);
  const withExtra = results.find((r) => r.extra);
  const ok = results.find((r) => r.errors.length === 0) ?? first;
  return {
    suite: first.suite,
    label: ok.label,
    kind: ok.kind,
    figures,
    ...(withCounts ? { counts: withCounts.counts } : {}),
    ...(withExtra ? { extra: withExtra.extra } : {}),
    errors: all.flatMap((r) =>
      r.errors.map((e) => `${isWarmup(r) ? 'warm-up ' : ''}round ${r.round ?? '?'}: ${e}`),
    ),
    seconds: all.reduce((sum, r) => sum + (r.seconds ?? 0), 0),
    roundResults: all.map((r) => ({
      round: r.round,
      ...(isWarmup(r) ? { warmup: true } : {}),
      figures: r.figures,
      errors: r.errors,
      seconds: r.seconds,
    })),
  };
}
