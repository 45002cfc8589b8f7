/**
 * The goals per mode (performance of the distributed modes, and the in-process mode's W1), as ratios within one
 * run (DBOS and the floors measured in the same run, in the same rounds):
 *
 * | workload                       | BullMQ/Redis, 1 worker    | BullMQ/Redis, 2 workers   | PostgreSQL queue          |
 * |--------------------------------|---------------------------|---------------------------|---------------------------|
 * | W1 ms/step                     | ≤ 0.8× floor, ≤ 0.5× DBOS | same                      | ≤ 1.0× floor, ≤ 0.6× DBOS |
 * | W2 steps/s                     | ≥ 3× DBOS                 | ≥ 1.6× the 1-worker figure | ≥ 1.5× DBOS              |
 * | W3 wall ms                     | ≤ 220                     | ≤ 220                     | ≤ 250                     |
 * | statements / write txns / step | ≤ 1.5 / 1.2               | same                      | ≤ 2 / 1.5                 |
 *
 * And the in-process mode: W1 ≤ 2× the physical floor (one durable commit per step) of the same run.
 *
 * "floor" is the design floor (BullMQ + one upsert per step). Statements and write transactions per step are
 * W2's, all-in (every statement of the measured W2 runs ÷ their leaf steps: enqueue and `wait` included; the
 * marginal leaf step, without them, is shown beside).
 * Each verdict follows spread.ts: inconclusive when the ends of the range disagree.
 */
import { counts, figure, marginal, type BenchReport, type Target } from './shape.js';
import { exact, rangeOf, rangeText, ratioOf, verdictOf, type Ranged } from './spread.js';

/** The distributed modes with goals of their own, in table order. */
export const GOAL_MODES = ['agentloom-pg-redis-1', 'agentloom-pg-redis-2', 'agentloom-pg-pgqueue-1'] as const;

interface Limits {
  w1Floor: number;
  w1Dbos: number;
  w3: number;
  statements: number;
  writes: number;
}

const LIMITS: Record<(typeof GOAL_MODES)[number], Limits> = {
  'agentloom-pg-redis-1': { w1Floor: 0.8, w1Dbos: 0.5, w3: 220, statements: 1.5, writes: 1.2 },
  'agentloom-pg-redis-2': { w1Floor: 0.8, w1Dbos: 0.5, w3: 220, statements: 1.5, writes: 1.2 },
  'agentloom-pg-pgqueue-1': { w1Floor: 1.0, w1Dbos: 0.6, w3: 250, statements: 2, writes: 1.5 },
};

/** The in-process mode's goal: W1 toward the physical floor (one durable commit per step). */
export const LOCAL_GOAL_MODE = 'agentloom-pg-local';

/** W1 of the in-process mode at most this many times the physical floor of the same run. */
const LOCAL_W1_PHYSICAL = 2;

/** The goal rows, in table order (the name each Target carries). */
export const GOAL_ROWS = [
  'W1 vs the physical floor',
  'W1 vs the design floor',
  'W1 vs DBOS',
  'W2 throughput',
  'W3 fan-out wall time',
  'statements per step (W2, all-in)',
  'write transactions per step (W2, all-in)',
] as const;

const f = (v: number, digits = 2): string => v.toFixed(digits);

/**
 * Every goal of every mode of {@link GOAL_MODES}, and the in-process mode's. Each carries its `mode`: that is
 * what sets these apart from the performance budget's targets (targets.ts), which apply to the best mode.
 */
export function modeGoals(report: BenchReport): Target[] {
  const out: Target[] = [];
  const floor = figure(report, 'floor-bullmq-upsert', 'w1');
  const dbosW1 = figure(report, 'dbos', 'w1');
  const dbosW2 = figure(report, 'dbos', 'w2');
  const redis1W2 = figure(report, 'agentloom-pg-redis-1', 'w2');
  for (const mode of GOAL_MODES) {
    const limit = LIMITS[mode];
    const push = (
      name: (typeof GOAL_ROWS)[number],
      goal: string,
      v: Ranged | undefined,
      ok: (x: number) => boolean,
      show: (v: Ranged) => string,
    ): void => {
      out.push({
        mode,
        name,
        goal,
        actual: v === undefined || !Number.isFinite(v.value) ? 'not measured' : show(v) + rangeText(v),
        met: v === undefined ? undefined : ok(v.value),
        verdict: verdictOf(v, ok),
      });
    };
    const w1 = figure(report, mode, 'w1');
    const w2 = figure(report, mode, 'w2');
    const w3 = figure(report, mode, 'w3');
    push(
      'W1 vs the design floor',
      `≤ ${f(limit.w1Floor, 1)}× floor`,
      w1 && floor && ratioOf(w1, floor),
      (x) => x <= limit.w1Floor,
      (v) => `${f(v.value)}× (${f(w1?.median ?? 0)} vs ${f(floor?.median ?? 0)} ms/step)`,
    );
    push(
      'W1 vs DBOS',
      `≤ ${f(limit.w1Dbos, 1)}× DBOS`,
      w1 && dbosW1 && ratioOf(w1, dbosW1),
      (x) => x <= limit.w1Dbos,
      (v) => `${f(v.value)}× (${f(w1?.median ?? 0)} vs ${f(dbosW1?.median ?? 0)} ms/step)`,
    );
    if (mode === 'agentloom-pg-redis-2')
      push(
        'W2 throughput',
        '≥ 1.6× the 1-worker figure',
        w2 && redis1W2 && ratioOf(w2, redis1W2),
        (x) => x >= 1.6,
        (v) => `${f(v.value)}× (${f(w2?.median ?? 0, 0)} vs ${f(redis1W2?.median ?? 0, 0)} steps/s)`,
      );
    else {
      const k = mode === 'agentloom-pg-redis-1' ? 3 : 1.5;
      push(
        'W2 throughput',
        `≥ ${f(k, 1)}× DBOS`,
        w2 && dbosW2 && ratioOf(w2, dbosW2),
        (x) => x >= k,
        (v) => `${f(v.value)}× (${f(w2?.median ?? 0, 0)} vs ${f(dbosW2?.median ?? 0, 0)} steps/s)`,
      );
    }
    push(
      'W3 fan-out wall time',
      `≤ ${limit.w3} ms`,
      w3 && rangeOf(w3),
      (x) => x <= limit.w3,
      (v) => `${f(v.value, 0)} ms`,
    );
    const c = counts(report, mode, 'w2');
    const m = marginal(report, mode);
    const beside = (key: string): string =>
      m?.[key] === undefined ? '' : ` (a marginal leaf step: ${f(m[key] as number)})`;
    push(
      'statements per step (W2, all-in)',
      `≤ ${limit.statements}`,
      c && exact(c.statements),
      (x) => x <= limit.statements,
      (v) => f(v.value) + beside('statements'),
    );
    push(
      'write transactions per step (W2, all-in)',
      `≤ ${limit.writes}`,
      c && exact(c.writeTransactions),
      (x) => x <= limit.writes,
      (v) => f(v.value) + beside('writeTransactions'),
    );
  }
  const local = figure(report, LOCAL_GOAL_MODE, 'w1');
  const physical = figure(report, 'floor-commit', 'w1');
  const v = local && physical && ratioOf(local, physical);
  const ok = (x: number) => x <= LOCAL_W1_PHYSICAL;
  out.push({
    mode: LOCAL_GOAL_MODE,
    name: 'W1 vs the physical floor',
    goal: `≤ ${f(LOCAL_W1_PHYSICAL, 1)}× one durable commit`,
    actual:
      v === undefined || !Number.isFinite(v.value)
        ? 'not measured'
        : `${f(v.value)}× (${f(local?.median ?? 0)} vs ${f(physical?.median ?? 0)} ms/step)${rangeText(v)}`,
    met: v === undefined ? undefined : ok(v.value),
    verdict: verdictOf(v, ok),
  });
  return out;
}
