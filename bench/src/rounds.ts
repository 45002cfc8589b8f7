/**
 * Rounds: the comparison suites (floors, peers, agentloom's modes, the scaling suite) run `rounds` times,
 * interleaved (floor, DBOS, …, agentloom modes, floor, DBOS, …), each run a fresh process, so a disk or GC swing
 * during one run moves one round of one system, not a whole ratio. This module plans that order and merges a
 * suite's rounds into one result:
 *
 * - a figure's `median` is the median of the rounds' medians, `min`/`max` the lowest and highest round median,
 *   `rounds` every round's median in order, `samples` every measured run of every round;
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
 * The order of the runs: every round suite of `names` once per round (interleaved), then the others once, each
 * in `names` order.
 */
export function planRuns(names: string[], rounds: number): PlannedRun[] {
  const inRounds = names.filter((n) => ROUND_SUITES.includes(n));
  const once = names.filter((n) => !ROUND_SUITES.includes(n));
  const plan: PlannedRun[] = [];
  for (let round = 1; round <= rounds; round++) for (const name of inRounds) plan.push({ name, round });
  for (const name of once) plan.push({ name, round: 1 });
  return plan;
}

function mergeFigure(figures: Figure[]): Figure {
  const first = figures[0] as Figure;
  if (figures.length === 1) return first;
  const medians = figures.map((f) => f.median);
  const { median, min, max } = summarize(medians);
  return {
    median,
    min,
    max,
    samples: figures.flatMap((f) => f.samples),
    rounds: medians,
    unit: first.unit,
    note: first.note,
  };
}

/** Merges one suite's results of several rounds (in round order) into one. */
export function mergeRounds(results: SuiteResult[]): SuiteResult {
  const first = results[0];
  if (!first) throw new Error('mergeRounds: no results');
  if (results.length === 1) return { ...first, round: undefined };
  const figures: SuiteResult['figures'] = {};
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.figures) as FigureKey[]))];
  for (const w of keys) {
    const of = results.map((r) => r.figures[w]).filter((f): f is Figure => f !== undefined);
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
    errors: results.flatMap((r) => r.errors.map((e) => `round ${r.round ?? '?'}: ${e}`)),
    seconds: results.reduce((sum, r) => sum + (r.seconds ?? 0), 0),
    roundResults: results.map((r) => ({
      round: r.round,
      figures: r.figures,
      errors: r.errors,
      seconds: r.seconds,
    })),
  };
}
