/**
 * `npm run bench`: starts a durable PostgreSQL 15 and a Redis, runs every suite in a process of its own (floors,
 * peers, agentloom in each mode and the scaling suite in several interleaved rounds, see rounds.ts; then W4–W6
 * and tracing once), and writes BENCHMARKS.md at the repository root, the raw results
 * (bench/results/results.json) and the charts (bench/results/chart.svg and scaling.svg, vega-lite rendered to SVG).
 *
 * Flags: `--quick` (tiny scale for developing the suite; writes to bench/results/quick/ only), `--rounds N`
 * (measured rounds of the comparison suites; default 5, 2 with --quick), `--warmup-rounds N` (unmeasured rounds
 * before them; default 1, 0 with --quick), `--only a,b`
 * (run only these suites; the report then covers only them), `--render` (run nothing: re-render the report and
 * chart from the results.json already there), `--baseline FILE [--baseline-label TEXT]` (compare with the
 * results.json of another run on this machine, e.g. of the code before a change: a "Before and after" section).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH, FULL, QUICK, REPO, type BenchContext, type Scale } from './context.js';
import { errorText, type SuiteResult } from './measure.js';
import { collectMachine, loadAverage } from './report/machine.js';
import type { Baseline, BenchReport } from './report/shape.js';
import { evaluateTargets } from './report/targets.js';
import { renderChart } from './report/chart.js';
import { renderScalingChart } from './report/scaling-chart.js';
import { renderMarkdown } from './report/markdown.js';
import { formatWithPrettier } from './report/format.js';
import { startBenchPostgres, startLocalRedis, type BenchPostgres, type LocalServer } from './services.js';
import { SUITES } from './suite.js';
import { mergeRounds, planRuns, ROUND_SUITES } from './rounds.js';

/** Longest a suite may take before it is killed and reported as failed. */
const SUITE_TIMEOUT_MS = 15 * 60_000;

/** Suites that need PostgreSQL restarted with track_commit_timestamp=on. */
const NEEDS_COMMIT_TIMESTAMPS = new Set(['w6']);

function parseArgs(argv: string[]): {
  scale: Scale;
  only: string[] | undefined;
  baseline: Baseline | undefined;
} {
  const quick = argv.includes('--quick');
  const value = (flag: string): string | undefined => {
    const index = argv.indexOf(flag);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const only = value('--only')?.split(',').filter(Boolean);
  for (const name of only ?? []) if (!SUITES[name]) throw new Error(`unknown suite ${name}`);
  const rounds = value('--rounds');
  if (rounds !== undefined && !(Number(rounds) >= 1 && Number.isInteger(Number(rounds))))
    throw new Error(`--rounds ${rounds}: give a whole number of rounds, at least 1`);
  const warmupRounds = value('--warmup-rounds');
  if (warmupRounds !== undefined && !(Number(warmupRounds) >= 0 && Number.isInteger(Number(warmupRounds))))
    throw new Error(`--warmup-rounds ${warmupRounds}: give a whole number of warm-up rounds, 0 or more`);
  const base = quick ? QUICK : FULL;
  const scale: Scale = {
    ...base,
    ...(rounds === undefined ? {} : { rounds: Number(rounds) }),
    ...(warmupRounds === undefined ? {} : { warmupRounds: Number(warmupRounds) }),
  };
  const file = value('--baseline');
  let baseline: Baseline | undefined;
  if (file) {
    if (!existsSync(file))
      throw new Error(`--baseline ${file}: no such file; give the results.json of an earlier run`);
    const { baseline: _nested, ...report } = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;
    baseline = { label: value('--baseline-label') ?? `baseline run (${file})`, report };
  }
  return { scale, only, baseline };
}

function runSuite(name: string, ctx: BenchContext): Promise<SuiteResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', join(BENCH, 'src/suite.ts'), name], {
      cwd: BENCH,
      env: { ...process.env, BENCH_CONTEXT: JSON.stringify(ctx) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-8000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => {
      output += `\nsuite ${name} killed after ${SUITE_TIMEOUT_MS / 60_000} minutes`;
      child.kill('SIGKILL');
    }, SUITE_TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      if (code === 0 && existsSync(ctx.resultFile)) {
        const result = JSON.parse(readFileSync(ctx.resultFile, 'utf8')) as SuiteResult;
        return resolve({ ...result, round: ctx.round, seconds });
      }
      resolve({
        suite: name,
        label: name,
        kind: name.startsWith('agentloom') ? 'agentloom' : name.startsWith('w') ? 'extra' : 'peer',
        round: ctx.round,
        figures: {},
        errors: [`exited ${code ?? signal}: ${output.trim().split('\n').slice(-25).join('\n')}`],
        seconds,
      });
    });
  });
}

function describe(result: SuiteResult): string {
  const f = result.figures;
  const parts = [
    f.w1 && `W1 ${f.w1.median.toFixed(2)} ms/step`,
    f.w2 && `W2 ${f.w2.median.toFixed(0)} steps/s`,
    f.w3 && `W3 ${f.w3.median.toFixed(0)} ms`,
    result.errors.length > 0 && `FAILED: ${result.errors[0]?.split('\n')[0]}`,
  ].filter(Boolean);
  const round =
    result.round === undefined || !ROUND_SUITES.includes(result.suite)
      ? ''
      : ` ${result.round < 1 ? 'warm-up ' : ''}r${result.round}`;
  return `${(result.suite + round).padEnd(27)} ${(result.seconds ?? 0).toFixed(0).padStart(4)} s  ${parts.join('  ')}`;
}

/** Writes results.json, the chart and the report. */
async function writeOutputs(
  report: BenchReport,
  paths: { outDir: string; reportPath: string },
): Promise<void> {
  const full = { ...report, targets: evaluateTargets(report) };
  const jsonPath = join(paths.outDir, 'results.json');
  writeFileSync(jsonPath, await formatWithPrettier(JSON.stringify(full), jsonPath));
  const chartPath = join(paths.outDir, 'chart.svg');
  writeFileSync(chartPath, await renderChart(full));
  const scalingPath = join(paths.outDir, 'scaling.svg');
  const scaling = await renderScalingChart(full);
  if (scaling) writeFileSync(scalingPath, scaling);
  const markdown = renderMarkdown(full, {
    reportPath: paths.reportPath,
    chartPath,
    jsonPath,
    scalingChartPath: scaling ? scalingPath : undefined,
  });
  writeFileSync(paths.reportPath, await formatWithPrettier(markdown, paths.reportPath));
  console.log(`bench: wrote ${paths.reportPath}, ${jsonPath}, ${chartPath}`);
}

async function main(): Promise<void> {
  const { scale, only, baseline } = parseArgs(process.argv.slice(2));
  const names = Object.keys(SUITES).filter((n) => !only || only.includes(n));
  const outDir = scale.name === 'quick' ? join(BENCH, 'results/quick') : join(BENCH, 'results');
  const reportPath = scale.name === 'quick' ? join(outDir, 'BENCHMARKS.md') : join(REPO, 'BENCHMARKS.md');
  mkdirSync(outDir, { recursive: true });
  if (process.argv.includes('--render')) {
    const report = JSON.parse(readFileSync(join(outDir, 'results.json'), 'utf8')) as BenchReport;
    return writeOutputs(baseline ? { ...report, baseline } : report, { outDir, reportPath });
  }
  const work = mkdtempSync(join(tmpdir(), 'agentloom-bench-'));
  chmodSync(work, 0o755);
  const startedAt = new Date();
  const loadBefore = loadAverage();
  const plan = planRuns(names, scale.rounds, scale.warmupRounds);
  console.log(
    `bench: ${scale.name} scale, ${scale.warmupRounds} warm-up round(s) and ${scale.rounds} round(s), suites: ${names.join(', ')}\nbench: work directory ${work}`,
  );
  let postgres: BenchPostgres | undefined;
  let redis: LocalServer | undefined;
  const results: SuiteResult[] = [];
  try {
    postgres = await startBenchPostgres(join(work, 'pg'));
    redis = await startLocalRedis(join(work, 'redis'));
    const machine = await collectMachine(postgres.url, redis.url);
    console.log(`bench: PostgreSQL on ${postgres.url}, Redis on ${redis.url}`);
    for (const { name, round } of plan) {
      if (NEEDS_COMMIT_TIMESTAMPS.has(name) && postgres.settings.track_commit_timestamp !== 'on') {
        await postgres.stop();
        postgres = await startBenchPostgres(join(work, 'pg'), {
          port: postgres.port,
          extra: { track_commit_timestamp: 'on' },
        });
      }
      const workDir = join(work, `${name}-r${round}`);
      mkdirSync(workDir, { recursive: true });
      const ctx: BenchContext = {
        postgresUrl: postgres.url,
        redisUrl: redis.url,
        scale,
        resultFile: join(workDir, 'result.json'),
        workDir,
        round,
        rounds: scale.rounds,
        postgresPid: postgres.pid,
        redisPid: redis.pid,
      };
      const result = await runSuite(name, ctx);
      results.push({ ...result, suite: name });
      console.log(`bench: ${describe(result)}`);
    }
    const finishedAt = new Date();
    const report: BenchReport = {
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      minutes: (finishedAt.getTime() - startedAt.getTime()) / 60_000,
      loadAverage: { before: loadBefore, after: loadAverage() },
      scale,
      machine,
      postgresSettings: postgres.settings,
      // One result per suite, its rounds merged, in the order of `names`.
      suites: names.map((name) => mergeRounds(results.filter((r) => r.suite === name))),
      ...(baseline ? { baseline } : {}),
    };
    await writeOutputs(report, { outDir, reportPath });
    console.log(`bench: done in ${report.minutes.toFixed(1)} min`);
  } catch (err) {
    console.error(`bench: ${errorText(err)}`);
    process.exitCode = 1;
  } finally {
    await redis?.stop();
    await postgres?.stop();
    // Kept when something failed: the suites' directories hold the worker logs.
    if (results.some((r) => r.errors.length > 0))
      console.log(`bench: kept ${work} (worker logs of failed suites)`);
    else rmSync(work, { recursive: true, force: true });
  }
}

await main();
