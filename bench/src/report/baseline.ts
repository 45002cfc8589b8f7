/**
 * "Before and after": this run side by side with a baseline run (`--baseline FILE`, the results.json of a run of
 * other code on the same machine, e.g. before a refactor). Absolute times drift between runs, so each agentloom
 * figure is compared as a ratio to the design floor and to DBOS of its own run, and the change of that ratio is
 * what tells whether the code got slower.
 */
import type { Figure } from '../measure.js';
import { figure, higherIsBetter, type Baseline, type BenchReport, type Workload } from './shape.js';

/** The agentloom modes compared, in report order. */
export const MODES = [
  'agentloom-pg-local',
  'agentloom-pg-redis-1',
  'agentloom-pg-redis-2',
  'agentloom-pg-pgqueue-1',
  'agentloom-pglite',
];
/** The workloads compared, with their unit and digits. */
export const WORKLOADS: { workload: Workload; unit: string; digits: number }[] = [
  { workload: 'w1', unit: 'ms per step', digits: 2 },
  { workload: 'w2', unit: 'steps/s', digits: 0 },
  { workload: 'w3', unit: 'ms', digits: 0 },
];
/** A ratio that moved by more than this (as a fraction, in the slower direction) is called a regression. */
export const TOLERANCE = 0.1;

export const fmt = (value: number | undefined, digits: number): string =>
  value === undefined || !Number.isFinite(value)
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** agentloom ÷ the reference, oriented so that below 1 is better for every workload. */
export function cost(
  mine: Figure | undefined,
  reference: Figure | undefined,
  workload: Workload,
): number | undefined {
  if (!mine || !reference || mine.median === 0 || reference.median === 0) return undefined;
  return higherIsBetter(workload) ? reference.median / mine.median : mine.median / reference.median;
}

interface Row {
  cells: string[];
  regressed: boolean;
}

function row(
  report: BenchReport,
  base: Baseline['report'],
  mode: string,
  spec: (typeof WORKLOADS)[number],
): Row | undefined {
  const { workload, digits } = spec;
  const before = figure(base as BenchReport, mode, workload);
  const after = figure(report, mode, workload);
  if (!before && !after) return undefined;
  const ratios = ['floor-bullmq-upsert', 'dbos'].map((ref) => {
    const b = cost(before, figure(base as BenchReport, ref, workload), workload);
    const a = cost(after, figure(report, ref, workload), workload);
    return { b, a, change: a !== undefined && b !== undefined ? a / b - 1 : undefined };
  });
  const changes = ratios.map((r) => r.change).filter((c): c is number => c !== undefined);
  // A regression only when the ratio worsened against both references: one reference alone may have moved.
  const regressed = changes.length > 0 && changes.every((c) => c > TOLERANCE);
  const pct = (c: number | undefined): string =>
    c === undefined ? '—' : `${c > 0 ? '+' : ''}${(c * 100).toFixed(0)}%`;
  return {
    regressed,
    cells: [
      mode.replace('agentloom-', ''),
      `${workload.toUpperCase()} (${spec.unit})`,
      fmt(before?.median, digits),
      fmt(after?.median, digits),
      ...ratios.flatMap((r) => [`${fmt(r.b, 2)}× → ${fmt(r.a, 2)}×`, pct(r.change)]),
      regressed ? 'slower' : 'within 10%',
    ],
  };
}

/** The section of BENCHMARKS.md comparing this run with its baseline ('' when there is none). */
export function baselineSection(report: BenchReport & { baseline?: Baseline }): string {
  const baseline = report.baseline;
  if (!baseline) return '';
  const base = baseline.report;
  const rows = MODES.flatMap((mode) =>
    WORKLOADS.map((spec) => row(report, base, mode, spec)).filter((r): r is Row => r !== undefined),
  );
  const header = [
    'mode',
    'workload',
    'before',
    'after',
    'cost vs design floor, before → after',
    'change',
    'cost vs DBOS, before → after',
    'change',
    'verdict',
  ];
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  const regressions = rows.filter((r) => r.regressed).length;
  const commitOf = (r: Baseline['report']): string =>
    `${r.machine.agentloom.commit}${r.machine.agentloom.dirty ? ' (with uncommitted changes)' : ''}`;
  return `## Before and after: ${baseline.label}

The same suites on the same machine: before, a run of ${commitOf(base)} started ${base.startedAt.slice(0, 16).replace('T', ' ')} UTC; after, this run (${commitOf(report)}). Absolute figures drift between runs, so each is compared as agentloom's cost relative to the design floor and to DBOS **of its own run** (below 1× is better, for W2 too: the reference's throughput ÷ agentloom's). A row is "slower" only when that cost grew by more than 10% against both references. Rows "slower": **${regressions}** of ${rows.length}.

${[line(header), line(header.map(() => '---')), ...rows.map((r) => line(r.cells))].join('\n')}
`;
}
