/**
 * The targets of ARCHITECTURE.md "Performance budget" and the goals per mode (of the distributed modes and the
 * in-process one, goals.ts), each evaluated against this run's figures (the report's shape and lookups: shape.ts), with
 * the spread rule of spread.ts: met / not met only when both ends of the range agree.
 */
import type { Figure } from '../measure.js';
import { modeGoals } from './goals.js';
import { best, figure, marginal, suite, type BenchReport, type Target } from './shape.js';
import { exact, rangeOf, rangeText, ratioOf, verdictOf, type Ranged } from './spread.js';

/** agentloom's PostgreSQL modes (all), and those running on one process (for the throughput target). */
export const PG_MODES = [
  'agentloom-pg-local',
  'agentloom-pg-redis-1',
  'agentloom-pg-redis-2',
  'agentloom-pg-pgqueue-1',
];
export const ONE_PROCESS_PG_MODES = ['agentloom-pg-local', 'agentloom-pg-redis-1', 'agentloom-pg-pgqueue-1'];

const f2 = (n: number): string => n.toFixed(2);

/** Evaluates every target of the performance budget and every goal per mode against `report`. */
export function evaluateTargets(report: BenchReport): Target[] {
  const targets: Target[] = [];
  const floor = figure(report, 'floor-bullmq-upsert', 'w1');
  const dbosW1 = figure(report, 'dbos', 'w1');
  const dbosW2 = figure(report, 'dbos', 'w2');
  const w1 = best(report, PG_MODES, 'w1');
  const w2 = best(report, ONE_PROCESS_PG_MODES, 'w2');
  const w3 = best(report, PG_MODES, 'w3');
  const lite = figure(report, 'agentloom-pglite', 'w1');
  const ratio = (a: Figure | undefined, b: Figure | undefined): Ranged | undefined =>
    a && b ? ratioOf(a, b) : undefined;
  const check = (
    name: string,
    goal: string,
    ranged: Ranged | number | undefined,
    ok: (v: number) => boolean,
    show: string,
  ) => {
    const v = typeof ranged === 'number' ? exact(ranged) : ranged;
    targets.push({
      name,
      goal,
      actual: v === undefined ? 'not measured' : show + rangeText(v),
      met: v === undefined ? undefined : ok(v.value),
      verdict: verdictOf(v, ok),
    });
  };

  const r1 = ratio(w1?.figure, floor);
  check(
    'W1 vs the design floor',
    '≤ 1.4× BullMQ + upsert',
    r1,
    (v) => v <= 1.4,
    `${f2(r1?.value ?? 0)}× (${w1?.name}: ${f2(w1?.figure.median ?? 0)} ms/step vs ${f2(floor?.median ?? 0)})`,
  );
  const r2 = ratio(w1?.figure, dbosW1);
  check(
    'W1 vs DBOS',
    '≤ 0.6× DBOS',
    r2,
    (v) => v <= 0.6,
    `${f2(r2?.value ?? 0)}× (${f2(w1?.figure.median ?? 0)} vs ${f2(dbosW1?.median ?? 0)} ms/step)`,
  );
  const r3 = ratio(w2?.figure, dbosW2);
  check(
    'W2 vs DBOS (one process)',
    '≥ 2× DBOS steps/s',
    r3,
    (v) => v >= 2,
    `${f2(r3?.value ?? 0)}× (${w2?.name}: ${(w2?.figure.median ?? 0).toFixed(0)} vs ${(dbosW2?.median ?? 0).toFixed(0)} steps/s)`,
  );
  check(
    'W3 fan-out wall time',
    '≤ 230 ms',
    w3 && rangeOf(w3.figure),
    (v) => v <= 230,
    `${(w3?.figure.median ?? 0).toFixed(0)} ms (${w3?.name})`,
  );
  check(
    'embedded PGlite W1',
    '≤ 3 ms/step',
    lite && rangeOf(lite),
    (v) => v <= 3,
    `${f2(lite?.median ?? 0)} ms/step`,
  );

  const modes = PG_MODES.filter((m) => marginal(report, m) !== undefined);
  const worst = (key: string): number | undefined =>
    modes.length === 0
      ? undefined
      : Math.max(...modes.map((m) => (marginal(report, m) as Record<string, number>)[key] ?? 0));
  const stmts = worst('statements');
  check(
    'statements per leaf step (every PostgreSQL mode, marginal)',
    '≤ 5',
    stmts,
    (v) => v <= 5,
    `${(stmts ?? 0).toFixed(1)} (worst mode; BEGIN/COMMIT included)`,
  );
  const writes = worst('writeTransactions');
  check(
    'write transactions per leaf step (every PostgreSQL mode, marginal)',
    '≤ 2',
    writes,
    (v) => v <= 2,
    `${(writes ?? 0).toFixed(2)} (worst mode)`,
  );

  const w5 = suite(report, 'w5')?.extra as Record<string, number> | undefined;
  const growth = w5?.rssGrowthPerPausedRunBytes;
  check(
    'W5 worker RSS growth per paused run',
    '≈ 0 (taken as < 200 bytes per paused run)',
    growth,
    (v) => v < 200,
    `${(growth ?? 0).toFixed(0)} bytes per paused run (${(((w5?.rssGrowthBytes ?? 0) as number) / 2 ** 20).toFixed(1)} MiB over ${w5?.paused ?? 0})`,
  );
  return [...targets, ...modeGoals(report)];
}
