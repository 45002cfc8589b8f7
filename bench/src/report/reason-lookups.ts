/**
 * What the reasons for missed goals per mode (reasons.ts, reasons-w1.ts) share: the modes they compare, the goal
 * rows to explain, a row's key in the set of rows a reason explains, and number and label formatting.
 */
import { labelOf, type BenchReport, type Target } from './shape.js';

export const n = (value: number | undefined, digits = 2): string =>
  value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);

/** A mode's label without the leading "agentloom, ". */
export const shortLabel = (report: BenchReport, mode: string): string =>
  labelOf(report, mode).replace(/^agentloom, /, '');

export const LOCAL = 'agentloom-pg-local';
export const REDIS1 = 'agentloom-pg-redis-1';
export const PGQ = 'agentloom-pg-pgqueue-1';

/**
 * The goal rows of `name` to explain: not met, or inconclusive with the median missing the bound. (A row whose
 * median meets it gets no reason why it cannot be met: see goalReasons in reasons.ts.)
 */
export function missed(report: BenchReport, name: string): Target[] {
  return (report.targets ?? []).filter(
    (t) =>
      t.mode !== undefined &&
      t.name === name &&
      (t.verdict === 'not met' || (t.verdict === 'inconclusive' && t.met !== true)),
  );
}

/** `${goal}|${mode}`: the key of a goal row in the set of rows a reason explains. */
export const rowKey = (t: Target): string => `${t.name}|${t.mode ?? ''}`;
