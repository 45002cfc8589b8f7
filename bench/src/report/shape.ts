/**
 * The report's shape (results.json) and lookups into it: what targets.ts, baseline.ts, the charts and the
 * analysis read. Imports only the measurements' types, so every report module can import it.
 */
import type { Scale } from '../context.js';
import type { CountsPerStep, Figure, SuiteResult } from '../measure.js';
import type { Machine } from './machine.js';

/** Everything one run produced (results.json). */
export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  minutes: number;
  loadAverage: { before: number[]; after: number[] };
  scale: Scale;
  machine: Machine;
  postgresSettings: Record<string, string>;
  suites: SuiteResult[];
  targets?: Target[];
  /** The run this one is compared with (`--baseline`), see baseline.ts. */
  baseline?: Baseline;
}

/** One target and whether this run meets it (report/spread.ts: the rule for "inconclusive"). */
export interface Target {
  name: string;
  goal: string;
  actual: string;
  /** The verdict of the medians; undefined: could not be evaluated (a figure is missing). */
  met: boolean | undefined;
  /** met / not met when both ends of the range agree, else inconclusive (absent in older results). */
  verdict?: 'met' | 'not met' | 'inconclusive' | 'not measured';
  /**
   * For a goal per mode (goals.ts), the mode it applies to; absent for a target of the performance budget
   * (targets.ts). Results written before this field decided it carry an `issue` key instead, which nothing reads:
   * the targets are evaluated anew from the suites' figures whenever the report is rendered.
   */
  mode?: string;
}

export type Workload = 'w1' | 'w2' | 'w3';

/** A baseline run as stored in results.json (its own baseline dropped). */
export interface Baseline {
  label: string;
  report: Omit<BenchReport, 'baseline'>;
}

/** Whether larger is better for a workload's figure. */
export function higherIsBetter(workload: Workload): boolean {
  return workload === 'w2';
}

export function suite(report: BenchReport, name: string): SuiteResult | undefined {
  return report.suites.find((s) => s.suite === name);
}

export function figure(report: BenchReport, name: string, workload: Workload): Figure | undefined {
  return suite(report, name)?.figures[workload];
}

export function marginal(report: BenchReport, name: string): Record<string, number> | undefined {
  return suite(report, name)?.extra?.marginalLeafStep as Record<string, number> | undefined;
}

export function counts(report: BenchReport, name: string, key: string): CountsPerStep | undefined {
  return suite(report, name)?.counts?.[key];
}

/** The best of `names` on `workload` (by median). */
export function best(
  report: BenchReport,
  names: string[],
  workload: Workload,
): { name: string; figure: Figure } | undefined {
  const candidates = names
    .map((name) => ({ name, figure: figure(report, name, workload) }))
    .filter((c): c is { name: string; figure: Figure } => c.figure !== undefined);
  candidates.sort((a, b) =>
    higherIsBetter(workload) ? b.figure.median - a.figure.median : a.figure.median - b.figure.median,
  );
  return candidates[0];
}

/** Human label of a suite. */
export function labelOf(report: BenchReport, name: string): string {
  return suite(report, name)?.label ?? name;
}
