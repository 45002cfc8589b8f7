/**
 * Why a goal per mode is not met, in words computed from the run (no figure is typed in): for each goal row
 * the goals table marks not met or inconclusive, what bounds it on this machine (the CPU a step costs against the
 * cores there are, what the design floor itself took) and what the counters say the distributed mode adds over
 * the in-process one, with the lever that would remove it. The W1 reasons are in reasons-w1.ts.
 */
import type { RoundTrips } from '../agentloom/breakdown.js';
import type { W3Timeline } from '../agentloom/timeline.js';
import { LOCAL, missed, n, PGQ, REDIS1, rowKey, shortLabel } from './reason-lookups.js';
import { physicalReasons, w1Reasons } from './reasons-w1.js';
import { scalingRows } from './scaling.js';
import { counts, figure, marginal, suite, type BenchReport, type Target } from './shape.js';
import { plusFigure, ratioOf } from './spread.js';

/** The CPU ceiling of W2 on this machine: every core busy at today's CPU per step (the scaling suite's 1-worker point). */
function cpuCeiling(
  report: BenchReport,
):
  | { cores: number; msPerStep: number; ceiling: number; busy: number; stepsPerSecond: number; pg: number }
  | undefined {
  const one = scalingRows(report).find((r) => r.workers === 1);
  const p = one?.point;
  if (!one || !p) return undefined;
  const c = p.cpuMsPerStep;
  const msPerStep = c.workers + c.postgres + c.bench + c.redis;
  return {
    cores: p.cores,
    msPerStep,
    ceiling: (p.cores * 1000) / msPerStep,
    busy: p.machineBusy,
    stepsPerSecond: one.figure.median,
    pg: c.postgres,
  };
}

function w2Reasons(report: BenchReport, covered: Set<string>): string[] {
  const out: string[] = [];
  const cpu = cpuCeiling(report);
  const dbos = figure(report, 'dbos', 'w2')?.median;
  const redis1 = figure(report, REDIS1, 'w2')?.median;
  const w2Row = (mode: string): Target | undefined =>
    missed(report, 'W2 throughput').find((t) => t.mode === mode);
  const explain = (t: Target | undefined): boolean => {
    if (t) covered.add(rowKey(t));
    return t !== undefined;
  };
  if (cpu && dbos && explain(w2Row(REDIS1))) {
    const needed = 3 * dbos;
    out.push(
      `**W2, Redis, ≥ 3× DBOS** (${n(redis1, 0)} steps/s against the ${n(needed, 0)} it asks): on this machine a W2 ` +
        `step costs ${n(cpu.msPerStep)} ms of CPU in all (scaling suite, 1 worker process: the worker, PostgreSQL's ` +
        `backends ${n(cpu.pg)} ms, the bench process's enqueue and wait, Redis), so ${cpu.cores} fully busy cores ` +
        `would run at most ${n(cpu.ceiling, 0)} steps/s` +
        (cpu.ceiling < needed
          ? ` — below the goal: ${n(needed, 0)} steps/s needs ≤ ${n((cpu.cores * 1000) / needed)} ms of CPU per step in ` +
            `all, of which PostgreSQL's backends alone take ${n(cpu.pg)} today. Cannot be met on ${cpu.cores} ` +
            `cores at today's CPU per step; what would move it: less worker CPU per step (the worker profile above: GC, ` +
            `socket writes, the store's statement building, the pg driver) and fewer statements per invocation (below).`
          : ` — above the goal: the rest is round trips, not CPU (machine ${n(cpu.busy * 100, 0)}% busy).`),
    );
  }
  if (cpu && explain(w2Row('agentloom-pg-redis-2'))) {
    const bound = cpu.ceiling / cpu.stepsPerSecond;
    out.push(
      `**W2, 2 worker processes ≥ 1.6× one**: with one worker process the machine was already ` +
        `${n(cpu.busy * 100, 0)}% busy, and the CPU ceiling above is ${n(bound)}× the 1-worker figure` +
        (bound < 1.6
          ? `: a second process on the same ${cpu.cores} cores can add at most that, so 1.6× cannot be met on this ` +
            `machine (it needs cores the second process does not share with the first and with PostgreSQL).`
          : `: the cores would allow it; the second process waits on the same PostgreSQL commits.`),
    );
  }
  const pgq = counts(report, PGQ, 'w2');
  const r1 = counts(report, REDIS1, 'w2');
  const pgqW2 = figure(report, PGQ, 'w2')?.median;
  if (pgq && r1 && explain(w2Row(PGQ))) {
    out.push(
      `**W2, PostgreSQL queue ≥ 1.5× DBOS** (${n(pgqW2, 0)} steps/s, the Redis mode ${n(redis1, 0)} on the same ` +
        `engine): BullMQ's PostgreSQL backend adds ${n(pgq.statements - r1.statements)} statements, ` +
        `${n(pgq.writeTransactions - r1.writeTransactions)} write transactions and ` +
        `${n((pgq.walBytes - r1.walBytes) / 1024, 1)} KiB of WAL per step (its job rows, written durably, and its ` +
        `polling: per run, the job's add, its fetch and its finish, each a transaction of its own), on the ` +
        `database that also holds the steps: with the same engine, the mode runs ` +
        `${n(pgqW2 !== undefined && redis1 ? (100 * pgqW2) / redis1 : undefined, 0)}% of the Redis mode's steps/s. ` +
        (dbos && redis1 !== undefined && 1.5 * dbos > redis1
          ? `The goal asks ${n(1.5 * dbos, 0)} steps/s: more than the same engine ran with no queue cost in the ` +
            `database at all (the Redis mode, ${n(redis1, 0)}), so it cannot be met on this machine while the ` +
            `queue is BullMQ's PostgreSQL backend. `
          : '') +
        `Lever: let the step's own commit be the queue write (a runnable node row is the job) instead of a second ` +
        `durable queue beside it.`,
    );
  }
  return out;
}

/** The timed stretches of W3 runs ("Where a W3 run's time goes"): in-process over the sleep, the missed modes over it. */
function w3Timed(report: BenchReport, rows: Target[]): string {
  const of = (m: string): W3Timeline | undefined =>
    suite(report, m)?.extra?.w3Timeline as W3Timeline | undefined;
  const l = of(LOCAL);
  if (!l) return '';
  const d = (a: number, b: number): string => `${a - b >= 0 ? '+' : '−'}${n(Math.abs(a - b))}`;
  const others = [...new Set(rows.map((t) => t.mode ?? ''))].flatMap((mode) => {
    const t = of(mode);
    if (!t || mode === LOCAL) return [];
    return [
      `${shortLabel(report, mode)} ${d(t.totalMs, l.totalMs)} ms over it (the enqueue ` +
        `${d(t.enqueueMs, l.enqueueMs)}, to the fan-out ${d(t.toFanOutMs, l.toFanOutMs)}, the branches ` +
        `${d(t.branchesMs, l.branchesMs)}, to the join's insert ${d(t.toJoinMs, l.toJoinMs)}, the join ` +
        `${d(t.joinMs, l.joinMs)}, the end to \`wait\` ${d(t.endToWaitMs, l.endToWaitMs)})`,
    ];
  });
  return (
    ` Timed (${l.runs} more runs each, "Where a W3 run's time goes"), the in-process run took ` +
    `${n(l.totalMs - l.sleepMs, 1)} ms beyond its branches' ${l.sleepMs} ms sleep: the enqueue ${n(l.enqueueMs)}, ` +
    `to the fan-out's statement ${n(l.toFanOutMs)} (the root's and the parallel's advances), the branches ` +
    `${n(l.branchesMs)} beyond their sleep (the fan-out statement, ${l.branches} leaf starts, their timers, their ` +
    `ends gathered into ${n(l.endStatements, 0)} statement${l.endStatements === 1 ? '' : 's'}), from the last ends' ` +
    `statement to the join's insert ${n(l.toJoinMs)} (that statement and the parallel's end), the join ` +
    `${n(l.joinMs)}, the end to \`wait\` ${n(l.endToWaitMs)}` +
    (others.length > 0 ? `; ${others.join('; ')}.` : '.')
  );
}

function w3Reasons(report: BenchReport, covered: Set<string>): string[] {
  const rows = missed(report, 'W3 fan-out wall time');
  if (rows.length === 0) return [];
  const localFigure = figure(report, LOCAL, 'w3');
  const local = localFigure?.median;
  const floor = figure(report, 'floor-bullmq-upsert', 'w3');
  const raw = figure(report, 'floor-bullmq', 'w3');
  const redis = counts(report, REDIS1, 'w3');
  const localCounts = counts(report, LOCAL, 'w3');
  const bound = Math.min(...rows.map((t) => Number(/([\d.]+) ms/.exec(t.goal)?.[1])).filter(Number.isFinite));
  // What bounds the goal in this run: agentloom with no queue at all (the in-process mode). When it took longer than
  // the bound, the distributed modes, which add a queue trip to its steps, cannot meet it here. (The design floor
  // bounds nothing: agentloom runs the branches on the worker that inserts them, the floor queues each one.)
  const below: string[] = [];
  // The in-process mode bounds a distributed one only where that one took at least as long (paired by round).
  const notFaster = (t: Target): boolean => {
    const mode = t.mode && figure(report, t.mode, 'w3');
    return Boolean(mode && localFigure && ratioOf(mode, localFigure).value >= 1);
  };
  const boundOf = (t: Target): number => Number(/([\d.]+) ms/.exec(t.goal)?.[1]);
  const alone = rows.filter((t) => local !== undefined && local > boundOf(t) && notFaster(t));
  if (alone.length > 0) {
    for (const t of alone) covered.add(rowKey(t));
    below.push(
      `agentloom's in-process mode (the same steps with no queue) took ${n(local, 0)} ms — for ` +
        alone.map((t) => shortLabel(report, t.mode ?? '')).join(' and '),
    );
  }
  if (localFigure) {
    // A Redis mode hands each run to a worker process through the queue once more than the in-process mode does
    // (the end reaches \`wait\` by PostgreSQL's notification in both): at least one BullMQ job's add, fetch and
    // finish, which the raw BullMQ floor's W1 step measures in this run, in one process.
    const rawStep = figure(report, 'floor-bullmq', 'w1');
    const tripped = rawStep && plusFigure(localFigure, rawStep, 1);
    const redisRows = rows.filter(
      (t) =>
        !alone.includes(t) &&
        (t.mode ?? '').includes('redis') &&
        notFaster(t) &&
        tripped &&
        tripped.median > boundOf(t),
    );
    if (tripped && rawStep && redisRows.length > 0) {
      for (const t of redisRows) covered.add(rowKey(t));
      below.push(
        `agentloom's in-process mode (the same steps with no queue) took ${n(local, 1)} ms, and ` +
          `${n(tripped.median, 1)} with the one trip through Redis a distributed run adds at its start ` +
          `(a BullMQ job's add, fetch and finish: the raw BullMQ floor's W1 step, ${n(rawStep.median)} ms, ` +
          `paired by round) — for ${redisRows.map((t) => shortLabel(report, t.mode ?? '')).join(' and ')}`,
      );
    }
  }
  return [
    `**W3** (50 branches of a 200 ms sleep): the design floor itself took ${n(floor?.median, 0)} ms ` +
      `(${n(floor?.min, 0)}–${n(floor?.max, 0)}) and a raw BullMQ fan-out without a database ${n(raw?.median, 0)}` +
      `; ≤ ${n(bound, 0)} ms leaves a distributed mode ${n(bound - 200, 0)} ms beyond the branches' sleep for the whole ` +
      `run. In every mode the ` +
      `worker whose advance inserts the branches claims as many as it has idle slots in that statement and runs them ` +
      `itself (only the rest are queued), and the join runs on the worker whose batch of ends settled the last ` +
      `branch: ${n(redis?.statements, 2)} statements per leaf with Redis against ${n(localCounts?.statements, 2)} ` +
      `in-process (${n(local, 0)} ms). What the distributed modes still add (${rows.map((t) => t.actual.split(';')[0]).join(' / ')}) ` +
      `is the run's start and end crossing processes: the enqueue's job fetched by the worker and the root read ` +
      `by its claim before the fan-out is advanced, and \`wait\` in the enqueuing process learning of the end from ` +
      `the worker's notification — a few ms on an idle machine, more when the two cores are shared by the bench, ` +
      `the worker, PostgreSQL and Redis.` +
      w3Timed(report, rows) +
      (below.length > 0
        ? ` In this run ${below.join(', and ')}: more than the ${n(bound, 0)} ms asked, so it cannot be met on ` +
          `this machine unless the engine's own work around the sleep gets faster (the stretches above).`
        : ''),
  ];
}

function statementReasons(report: BenchReport, covered: Set<string>): string[] {
  const rows = missed(report, 'statements per step (W2, all-in)');
  if (rows.length === 0) return [];
  const rt = suite(report, REDIS1)?.extra?.roundTrips as RoundTrips | undefined;
  const c = counts(report, REDIS1, 'w2');
  const m = marginal(report, REDIS1);
  const marginalStatements = m?.statements;
  if (!c || marginalStatements === undefined) return [];
  for (const t of rows) covered.add(rowKey(t));
  const perInvocation = (c.statements - marginalStatements) * 5;
  return [
    `**Statements per step, all-in** (${n(c.statements)} with Redis; a marginal leaf step ${n(marginalStatements)}): W2's ` +
      `invocations have 5 leaves, so what each invocation costs once weighs a fifth per step: ≈ ${n(perInvocation, 1)} ` +
      `statements per invocation — its enqueue and the first leaf's claim (\`wait\` reads the invocation only ` +
      `when the end's notification could not carry its view)` +
      (rt
        ? ` (${n((rt.w2.statementsTotal - marginalStatements) * 5, 1)} counted in the round-trip run)`
        : '') +
      `. With 1 statement per leaf, ≤ 1.5 all-in leaves 2.5 per 5-leaf invocation for the enqueue (which also ` +
      `writes the root's first advance) and the first leaf's claim.`,
  ];
}

/** The reasons, and the goal rows missed (or inconclusive) that none of them explains. */
export function goalReasons(report: BenchReport): { lines: string[]; unexplained: Target[] } {
  const covered = new Set<string>();
  const lines = [
    ...physicalReasons(report, covered),
    ...w1Reasons(report, covered),
    ...w2Reasons(report, covered),
    ...w3Reasons(report, covered),
    ...statementReasons(report, covered),
  ];
  // An inconclusive row whose median meets the goal needs no reason why it cannot be met: it is named as met at
  // the median, with the spread that keeps it from a verdict.
  const atMedian = (report.targets ?? []).filter(
    (t) => t.mode !== undefined && t.verdict === 'inconclusive' && t.met === true && !covered.has(rowKey(t)),
  );
  if (atMedian.length > 0) {
    for (const t of atMedian) covered.add(rowKey(t));
    lines.push(
      `**Met at the median, inconclusive** (the rounds' spread straddles the bound): ${atMedian
        .map((t) => `${t.name} ${t.goal} for ${shortLabel(report, t.mode ?? '')} — ${t.actual}`)
        .join('; ')}.`,
    );
  }
  const unexplained = (report.targets ?? []).filter(
    (t) =>
      t.mode !== undefined &&
      (t.verdict === 'not met' || t.verdict === 'inconclusive') &&
      !covered.has(rowKey(t)),
  );
  return { lines, unexplained };
}

/**
 * The reasons, as bullet points ('' when every goal is met). A goal row no computed reason explains is listed as
 * open, with its figure and verdict, so that no miss goes without a word.
 */
export function whyGoalsMissed(report: BenchReport): string {
  const { lines, unexplained } = goalReasons(report);
  if (unexplained.length > 0)
    lines.push(
      `**Open in this run** (no figure of this run puts ${unexplained.length === 1 ? 'it' : 'them'} out of reach on ` +
        `this machine): ${unexplained
          .map(
            (t) =>
              `${t.name} ${t.goal} for ${shortLabel(report, t.mode ?? '')} — ${t.actual}, ` +
              `${t.verdict === 'inconclusive' ? 'inconclusive (the rounds disagree)' : 'not met'}`,
          )
          .join(
            '; ',
          )}. What would move ${unexplained.length === 1 ? 'it' : 'them'}: the engine's CPU per step and ` +
        `the queue's hand-over per run (the reasons above).`,
    );
  if (lines.length === 0) return '';
  return `Why the goals not met are not met, computed from this run:\n\n${lines.map((l) => `- ${l}`).join('\n')}\n`;
}
