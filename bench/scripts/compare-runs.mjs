#!/usr/bin/env node
/**
 * Compares several bench runs of one code ("before") with several of another ("after"), each side as the median
 * of its runs: one run each cannot settle a 10% difference when the same code moves by more between runs.
 *
 *   node bench/scripts/compare-runs.mjs --before a.json,b.json,c.json --after d.json,e.json,f.json [--title T]
 *
 * Every file is a results.json of `npm run bench` (whole or `--only`). Each agentloom figure is taken as a cost
 * ratio to DBOS and to the physical floor (one durable commit, `floor-commit`) of its own run, below 1 better for
 * every workload; the medians of those ratios are compared. A row is "slower" only when the median ratio worsened
 * by more than 10% against both references, as BENCHMARKS.md's "Before and after" does for single runs.
 */
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
const arg = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const files = (name) => {
  const value = arg(name);
  if (!value) throw new Error(`${name} a.json,b.json,…: the results.json files of that side`);
  return value.split(',').filter(Boolean);
};
const before = files('--before').map((f) => JSON.parse(readFileSync(f, 'utf8')));
const after = files('--after').map((f) => JSON.parse(readFileSync(f, 'utf8')));
const title = arg('--title') ?? 'Before and after, medians of several runs';

const MODES = [
  'agentloom-pg-local',
  'agentloom-pg-redis-1',
  'agentloom-pg-redis-2',
  'agentloom-pg-pgqueue-1',
  'agentloom-pglite',
];
const WORKLOADS = [
  { w: 'w1', unit: 'ms per step', digits: 2, higherIsBetter: false },
  { w: 'w2', unit: 'steps/s', digits: 0, higherIsBetter: true },
  { w: 'w3', unit: 'ms', digits: 0, higherIsBetter: false },
];
const REFERENCES = [
  { suite: 'dbos', label: 'DBOS' },
  { suite: 'floor-commit', label: 'one durable commit' },
];
const TOLERANCE = 0.1;

const median = (values) => {
  const sorted = values.filter((v) => v !== undefined && Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const figure = (report, suite, w) => report.suites.find((s) => s.suite === suite)?.figures?.[w]?.median;
const cost = (report, mode, ref, spec) => {
  const mine = figure(report, mode, spec.w);
  const other = figure(report, ref, spec.w);
  if (!mine || !other) return undefined;
  return spec.higherIsBetter ? other / mine : mine / other;
};
const fmt = (v, digits) =>
  v === undefined
    ? '—'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (c) => (c === undefined ? '—' : `${c > 0 ? '+' : ''}${(c * 100).toFixed(0)}%`);
const list = (values, digits) => values.map((v) => fmt(v, digits)).join(', ');

const header = [
  'mode',
  'workload',
  'before (runs)',
  'after (runs)',
  ...REFERENCES.flatMap((r) => [`median cost vs ${r.label}, before → after`, 'change']),
  'verdict',
];
const rows = [];
for (const mode of MODES) {
  for (const spec of WORKLOADS) {
    const b = before.map((r) => figure(r, mode, spec.w));
    const a = after.map((r) => figure(r, mode, spec.w));
    if (b.every((v) => v === undefined) && a.every((v) => v === undefined)) continue;
    const changes = [];
    const cells = REFERENCES.flatMap((ref) => {
      const mb = median(before.map((r) => cost(r, mode, ref.suite, spec)));
      const ma = median(after.map((r) => cost(r, mode, ref.suite, spec)));
      const change = mb !== undefined && ma !== undefined ? ma / mb - 1 : undefined;
      if (change !== undefined) changes.push(change);
      return [`${fmt(mb, 2)}× → ${fmt(ma, 2)}×`, pct(change)];
    });
    const slower = changes.length > 0 && changes.every((c) => c > TOLERANCE);
    rows.push([
      mode.replace('agentloom-', ''),
      `${spec.w.toUpperCase()} (${spec.unit})`,
      list(b, spec.digits),
      list(a, spec.digits),
      ...cells,
      slower ? 'slower' : 'within 10%',
    ]);
  }
}
const line = (cells) => `| ${cells.join(' | ')} |`;
console.log(`# ${title}\n`);
console.log(
  `${before.length} runs before, ${after.length} after. Each figure is a cost ratio to a reference of its own run (below 1 is better); the medians of those ratios are compared. A row is "slower" only when the median worsened by more than 10% against both references.\n`,
);
console.log(line(header));
console.log(line(header.map(() => '---')));
for (const row of rows) console.log(line(row));
