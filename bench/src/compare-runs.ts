/**
 * Compares several bench runs of one code ("before") with several of another ("after"), each side as the median
 * of its runs: one run each cannot settle a 10% difference when the same code moves by more between runs.
 *
 *   node --import tsx bench/src/compare-runs.ts --before a.json,b.json,c.json --after d.json,e.json,f.json [--title T]
 *
 * Every file is a results.json of `npm run bench` (whole or `--only`). Each agentloom figure is taken as a cost
 * ratio to DBOS and to the physical floor (one durable commit, `floor-commit`) of its own run, as "Before and
 * after" in BENCHMARKS.md does for single runs (report/baseline.ts: the same modes, workloads, ratio and
 * tolerance); the medians of those ratios are compared.
 */
import { readFileSync } from 'node:fs';
import { cost, fmt, MODES, TOLERANCE, WORKLOADS } from './report/baseline.js';
import { figure, type BenchReport } from './report/shape.js';

const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const reports = (name: string): BenchReport[] => {
  const value = arg(name);
  if (!value) throw new Error(`${name} a.json,b.json,…: the results.json files of that side`);
  return value
    .split(',')
    .filter(Boolean)
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as BenchReport);
};
const before = reports('--before');
const after = reports('--after');
const title = arg('--title') ?? 'Before and after, medians of several runs';

const REFERENCES = [
  { suite: 'dbos', label: 'DBOS' },
  { suite: 'floor-commit', label: 'one durable commit' },
];

function median(values: (number | undefined)[]): number | undefined {
  const sorted = values
    .filter((v): v is number => v !== undefined && Number.isFinite(v))
    .sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
const pct = (c: number | undefined): string =>
  c === undefined ? '—' : `${c > 0 ? '+' : ''}${(c * 100).toFixed(0)}%`;

const header = [
  'mode',
  'workload',
  'before (runs)',
  'after (runs)',
  ...REFERENCES.flatMap((r) => [`median cost vs ${r.label}, before → after`, 'change']),
  'verdict',
];
const rows: string[][] = [];
for (const mode of MODES) {
  for (const spec of WORKLOADS) {
    const { workload, digits } = spec;
    const b = before.map((r) => figure(r, mode, workload)?.median);
    const a = after.map((r) => figure(r, mode, workload)?.median);
    if (b.every((v) => v === undefined) && a.every((v) => v === undefined)) continue;
    const changes: number[] = [];
    const cells = REFERENCES.flatMap((ref) => {
      const ratio = (r: BenchReport) =>
        cost(figure(r, mode, workload), figure(r, ref.suite, workload), workload);
      const mb = median(before.map(ratio));
      const ma = median(after.map(ratio));
      const change = mb !== undefined && ma !== undefined ? ma / mb - 1 : undefined;
      if (change !== undefined) changes.push(change);
      return [`${fmt(mb, 2)}× → ${fmt(ma, 2)}×`, pct(change)];
    });
    const slower = changes.length > 0 && changes.every((c) => c > TOLERANCE);
    rows.push([
      mode.replace('agentloom-', ''),
      `${workload.toUpperCase()} (${spec.unit})`,
      b.map((v) => fmt(v, digits)).join(', '),
      a.map((v) => fmt(v, digits)).join(', '),
      ...cells,
      slower ? 'slower' : 'within 10%',
    ]);
  }
}
const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
console.log(`# ${title}\n`);
console.log(
  `${before.length} runs before, ${after.length} after. Each figure is a cost ratio to a reference of its own run (below 1 is better); the medians of those ratios are compared. A row is "slower" only when the median worsened by more than 10% against both references.\n`,
);
console.log(line(header));
console.log(line(header.map(() => '---')));
for (const row of rows) console.log(line(row));
