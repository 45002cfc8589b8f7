/**
 * The scaling suite in the report (agentloom/scaling.ts): W2 on 1, 2, 4 worker processes — steps/s total and per
 * process (medians over rounds, with their range), beside the database's statements/s, Redis commands/s and the
 * CPU each process group used (round 1's counters, scaled by the median steps/s) — a chart (scaling-chart.ts),
 * and where the curve flattens and why, in words computed from the figures.
 */
import type { ProfileSummary } from '../agentloom/profile.js';
import type { ScalingPoint } from '../agentloom/scaling.js';
import type { Figure } from '../measure.js';
import { suite, type BenchReport } from './shape.js';
import { rangeOf } from './spread.js';

/** One worker count as reported. */
export interface ScalingRow {
  workers: number;
  figure: Figure;
  point: ScalingPoint | undefined;
}

/** The scaling rows of the report (empty when the suite did not run). */
export function scalingRows(report: BenchReport): ScalingRow[] {
  const s = suite(report, 'scaling-redis');
  if (!s) return [];
  const points = ((s.extra?.points ?? []) as ScalingPoint[]).slice();
  return Object.entries(s.figures)
    .map(([key, f]) => ({ workers: Number(key.replace('w2x', '')), figure: f as Figure }))
    .filter((r) => Number.isFinite(r.workers))
    .sort((a, b) => a.workers - b.workers)
    .map((r) => ({ ...r, point: points.find((p) => p.workers === r.workers) }));
}

const n = (value: number | undefined, digits = 0): string =>
  value === undefined || !Number.isFinite(value)
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** CPU cores used by a group at the median throughput: CPU ms per step × steps/s ÷ 1000. */
export function cores(row: ScalingRow, key: keyof ScalingPoint['cpuMsPerStep']): number | undefined {
  return row.point ? (row.point.cpuMsPerStep[key] * row.figure.median) / 1000 : undefined;
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Where the curve flattens and why, from the rows. */
function verdict(rows: ScalingRow[]): string {
  const first = rows[0];
  if (!first || rows.length < 2) return '';
  let flat: ScalingRow | undefined;
  for (let i = 1; i < rows.length; i++) {
    const prev = rows[i - 1] as ScalingRow;
    const row = rows[i] as ScalingRow;
    // Flattens where doubling the workers adds less than a fifth of the throughput.
    if (row.figure.median < 1.2 * prev.figure.median) {
      flat = prev;
      break;
    }
  }
  const last = rows[rows.length - 1] as ScalingRow;
  const p = (flat ?? last).point;
  const parts: string[] = [];
  parts.push(
    flat
      ? `The curve flattens from ${flat.workers} worker process(es): ${n(flat.figure.median)} steps/s, and ` +
          `${n(rows[rows.indexOf(flat) + 1]?.figure.median)} with ${rows[rows.indexOf(flat) + 1]?.workers}.`
      : `The curve does not flatten up to ${last.workers} worker processes (each step up adds at least 20%).`,
  );
  if (p) {
    const groups = (['workers', 'postgres', 'bench', 'redis'] as const)
      .map((k) => ({ k, ms: p.cpuMsPerStep[k] }))
      .sort((a, b) => b.ms - a.ms);
    const names = {
      workers: 'the worker processes',
      postgres: "PostgreSQL's backends",
      bench: 'the bench process (enqueue, wait)',
      redis: 'Redis',
    };
    const busy = p.machineBusy * 100;
    const cpuBound = busy >= 85;
    const at = flat ?? last;
    const ours = (['workers', 'postgres', 'bench', 'redis'] as const).reduce(
      (sum, k) => sum + (cores(at, k) ?? 0),
      0,
    );
    const others = Math.max(0, p.machineBusy * p.cores - ours);
    parts.push(
      `There the machine's ${p.cores} cores were ${n(busy)}% busy (the benchmark's processes ≈ ${n(ours, 2)} cores` +
        (others >= 0.2 ? `, other processes on the machine ≈ ${n(others, 2)}: not a quiet machine` : '') +
        `): ` +
        (cpuBound
          ? `the run is CPU-bound — every worker added takes CPU from PostgreSQL and the others on the same cores. `
          : `not CPU-bound: the steps wait on round trips (PostgreSQL commits, Redis commands), not on a core. `) +
        `CPU per step: ${groups.map((g) => `${names[g.k]} ${n(g.ms, 2)} ms`).join(', ')}; ` +
        `per step ${n(p.statementsPerStep, 2)} statements, ${n(p.writeTransactionsPerStep, 2)} write transactions ` +
        `and ${n(p.redisCommandsPerStep, 1)} Redis commands (scripts' own commands included).`,
    );
  }
  return parts.join(' ');
}

/** The "Scaling" section of BENCHMARKS.md ('' when the suite did not run). */
export function scalingSection(report: BenchReport, chartPath: string | undefined): string {
  const rows = scalingRows(report);
  if (rows.length === 0) return '';
  const base = rows[0]?.figure.median ?? Number.NaN;
  const body = rows.map((r) => {
    const range = rangeOf(r.figure);
    const p = r.point;
    return [
      String(r.workers),
      `**${n(r.figure.median)}** (${n(range.low)}–${n(range.high)})`,
      n(r.figure.median / r.workers),
      `${n(r.figure.median / base, 2)}×`,
      n(p && p.statementsPerStep * r.figure.median),
      n(p && p.writeTransactionsPerStep * r.figure.median),
      n(p && p.redisCommandsPerStep * r.figure.median),
      n(cores(r, 'workers'), 2),
      n(cores(r, 'postgres'), 2),
      n(cores(r, 'bench'), 2),
      n(cores(r, 'redis'), 2),
      p ? `${n(p.machineBusy * 100)}%` : '—',
    ];
  });
  const s = suite(report, 'scaling-redis');
  const profile = s?.extra?.workerProfile as ProfileSummary | undefined;
  const profileError = s?.extra?.workerProfileError as string | undefined;
  const profileText = profile
    ? `#### CPU profile of the worker at saturation (1 worker process, one W2 run)\n\nWall ${n(profile.wallMs)} ms, main thread busy ${n(profile.busyMs)} ms (${n((100 * profile.busyMs) / profile.wallMs)}%).\n\n` +
      table(
        ['area', 'self ms', '% of wall'],
        profile.byArea.slice(0, 12).map((a) => [a.name, n(a.selfMs), n(a.percent, 1)]),
      ) +
      '\n\n' +
      table(
        ['function', 'self ms', '% of wall'],
        profile.byFunction.slice(0, 12).map((a) => [`\`${a.name}\``, n(a.selfMs), n(a.percent, 1)]),
      )
    : profileError
      ? `The worker's profile failed: \`${profileError.slice(0, 300)}\``
      : '';
  return `## Scaling: W2 on 1, 2 and 4 worker processes (PostgreSQL + BullMQ/Redis)

${chartPath ? `![W2 steps/s by worker processes](${chartPath})\n\n` : ''}W2 (${report.scale.w2Invocations} concurrent invocations of 5 leaves) with n \`agentloom worker\` processes, each count on a fresh database. steps/s: median of the rounds (range of the rounds' medians). Statements/s, write transactions/s and Redis commands/s: round 1's counts per step × the median steps/s. CPU: cores used by each process group (round 1's CPU time per step × the median steps/s; PostgreSQL = the postmaster and its backends); machine busy: all cores, during round 1's measured runs.

${table(
  [
    'worker processes',
    'steps/s',
    'per process',
    'vs 1 worker',
    'statements/s',
    'write txns/s',
    'Redis commands/s (in scripts too)',
    'CPU: workers',
    'PostgreSQL',
    'bench process',
    'Redis',
    'machine busy',
  ],
  body,
)}

${verdict(rows)}

${profileText}
`;
}
