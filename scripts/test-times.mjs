// Summarises a vitest JSON report (--reporter=json --outputFile=F): per project, its files, tests, wall time (first
// file's start to last file's end) and the sum of its files' times; then the slowest files. Used by .ci/run.
// Usage: node scripts/test-times.mjs report.json [slowest=12]
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [file, slowestArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/test-times.mjs <vitest-report.json> [how many slowest files]');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const projectOf = (path) =>
  path.includes('/test/e2e/distributed/')
    ? 'distributed'
    : path.includes('/test/e2e/')
      ? 'e2e'
      : path.includes('/test/integration/')
        ? 'integration'
        : path.includes('/test/unit/')
          ? 'unit'
          : 'other';
const projects = new Map();
const files = [];
for (const r of report.testResults) {
  const name = relative(process.cwd(), r.name);
  const ms = r.endTime - r.startTime;
  files.push({ name, ms });
  const p = projects.get(projectOf(r.name)) ?? { files: 0, tests: 0, start: Infinity, end: 0, sum: 0 };
  p.files += 1;
  p.tests += r.assertionResults.length;
  p.start = Math.min(p.start, r.startTime);
  p.end = Math.max(p.end, r.endTime);
  p.sum += ms;
  projects.set(projectOf(r.name), p);
}
const s = (ms) => `${(ms / 1000).toFixed(0).padStart(5)} s`;
console.log('project       files  tests   wall      sum of files');
for (const [name, p] of projects)
  console.log(
    `${name.padEnd(12)} ${String(p.files).padStart(5)} ${String(p.tests).padStart(6)} ${s(p.end - p.start)} ${s(p.sum)}`,
  );
console.log(`slowest files:`);
for (const f of files.sort((a, b) => b.ms - a.ms).slice(0, Number(slowestArg ?? 12)))
  console.log(`${s(f.ms)}  ${f.name}`);
