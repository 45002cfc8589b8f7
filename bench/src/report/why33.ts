/**
 * Why a goal of issue 33 is not met, in words computed from the run (no figure is typed in): for each goal row
 * the goals table marks not met or inconclusive, what bounds it on this machine (the CPU a step costs against the
 * cores there are, what the design floor itself took) and what the counters say the distributed mode adds over
 * the in-process one, with the lever that would remove it.
 */
import type { RoundTrips } from '../agentloom/breakdown.js';
import type { ProfileSummary } from '../agentloom/profile.js';
import type { W1Timeline, W3Timeline } from '../agentloom/timeline.js';
import { scalingRows } from './scaling.js';
import { statementKind } from './sections33.js';
import type { Figure } from '../measure.js';
import { counts, figure, labelOf, marginal, suite, type BenchReport, type Target } from './shape.js';
import { plusFigure, ratioOf, shiftFigure } from './spread.js';

const n = (value: number | undefined, digits = 2): string =>
  value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);

/** A mode's label without the leading "agentloom, ". */
const shortLabel = (report: BenchReport, mode: string): string =>
  labelOf(report, mode).replace(/^agentloom, /, '');

const LOCAL = 'agentloom-pg-local';
const REDIS1 = 'agentloom-pg-redis-1';
const PGQ = 'agentloom-pg-pgqueue-1';

/**
 * The goal rows of `name` to explain: not met, or inconclusive with the median missing the bound. (A row whose
 * median meets it gets no reason why it cannot be met: see {@link reasons33}.)
 */
function missed(report: BenchReport, name: string): Target[] {
  return (report.targets ?? []).filter(
    (t) =>
      t.issue === 33 &&
      t.name === name &&
      (t.verdict === 'not met' || (t.verdict === 'inconclusive' && t.met !== true)),
  );
}

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

/**
 * What a run's hand-over through the PostgreSQL queue costs beyond the in-process mode, timed ("Where a W1 run's
 * time goes"): the stretches before the first leaf commits (the enqueue, which adds the job, its fetch by
 * the worker and the first leaf's claim there) and after the last (`wait` hearing of the end from another process), each
 * counted only where it took longer than in-process. The later leaves are left out: they are the same statement.
 */
function pgqHandOver(report: BenchReport): { ms: number; runs: number } | undefined {
  const timeline = (m: string): W1Timeline | undefined =>
    suite(report, m)?.extra?.w1Timeline as W1Timeline | undefined;
  const t = timeline(PGQ);
  const l = timeline(LOCAL);
  if (!t || !l) return undefined;
  const over = (a: number, b: number): number => Math.max(0, a - b);
  return {
    ms:
      over(t.enqueueMs, l.enqueueMs) +
      over(t.toFirstCommitMs, l.toFirstCommitMs) +
      over(t.endToWaitMs, l.endToWaitMs),
    runs: t.runs,
  };
}

/** `${goal}|${mode}`: the key of a goal row in the set of rows a reason explains. */
const rowKey = (t: Target): string => `${t.name}|${t.mode ?? ''}`;

/**
 * When even the in-process mode (no queue at all) is above a mode's W1 bound (on the design floor, or on DBOS),
 * or is once the least a run's hand-over to a worker process costs is added (the Redis modes: the raw BullMQ
 * floor's W1 step, one job's add, fetch and finish; the PostgreSQL queue: its hand-over as timed), spread over a
 * run's steps: said so, bound by bound, on ratios paired by round like the goals'. Adds each row it explains to
 * `covered`.
 */
function localBound(
  report: BenchReport,
  local: Figure | undefined,
  steps: number,
  against: { goal: string; what: string; figure: Figure | undefined }[],
  covered: Set<string>,
): string {
  if (!local) return '';
  const raw = figure(report, 'floor-bullmq', 'w1');
  const handOver = pgqHandOver(report);
  const withTrip = (mode: string): Figure | undefined =>
    mode.includes('redis')
      ? raw && plusFigure(local, raw, 1 / steps)
      : mode === PGQ && handOver
        ? shiftFigure(local, handOver.ms / steps)
        : undefined;
  const parts: string[] = [];
  let rows = 0;
  const trips = new Set<'redis' | 'pgq'>();
  const faster = new Map<string, number>();
  for (const { goal, what, figure: reference } of against) {
    if (!reference) continue;
    const alone = ratioOf(local, reference).value;
    const below = missed(report, goal).flatMap((t): { t: Target; tripped: number | undefined }[] => {
      const bound = Number(/([\d.]+)×/.exec(t.goal)?.[1]);
      if (!Number.isFinite(bound) || !t.mode) return [];
      // The argument rests on the mode costing at least what the in-process mode does; a mode that ran faster
      // than it in this run (paired by round) gets no such claim.
      const mode = figure(report, t.mode, 'w1');
      if (!mode) return [];
      const vsLocal = ratioOf(mode, local).value;
      if (vsLocal < 1) {
        faster.set(t.mode, vsLocal);
        covered.add(rowKey(t));
        return [];
      }
      if (alone > bound) return [{ t, tripped: undefined }];
      const tripFigure = withTrip(t.mode);
      const tripped = tripFigure && ratioOf(tripFigure, reference).value;
      return tripped !== undefined && tripped > bound ? [{ t, tripped }] : [];
    });
    if (below.length === 0) continue;
    rows += below.length;
    for (const b of below) covered.add(rowKey(b.t));
    const label = (t: Target): string => `${t.goal} for ${shortLabel(report, t.mode ?? '')}`;
    const plain = below.filter((b) => b.tripped === undefined).map((b) => label(b.t));
    if (plain.length > 0) parts.push(`${n(alone)}× ${what}, above ${plain.join('; ')}`);
    for (const kind of ['redis', 'pgq'] as const) {
      const trip = below.filter(
        (b) => b.tripped !== undefined && (kind === 'redis') === (b.t.mode ?? '').includes('redis'),
      );
      if (trip.length === 0) continue;
      trips.add(kind);
      const byValue = new Map<string, string[]>();
      for (const b of trip) byValue.set(n(b.tripped), [...(byValue.get(n(b.tripped)) ?? []), label(b.t)]);
      for (const [value, labels] of byValue)
        parts.push(
          `${n(alone)}× ${what} and ${value}× with ${kind === 'redis' ? "one BullMQ job's trip" : "the PostgreSQL queue's hand-over"} ` +
            `per run added, above ${labels.join('; ')}`,
        );
    }
  }
  const open =
    faster.size === 0
      ? ''
      : ` ${[...faster].map(([m, r]) => `${shortLabel(report, m)} ran ${n(r)}× the in-process mode`).join('; ')} ` +
        `in this run (paired by round): its engine work is split between the worker and the bench process's ` +
        `enqueue and \`wait\`, on two cores, so the in-process step does not bound it and its W1 goals stay open; ` +
        `what would move them is the engine's CPU per step (the in-process reason above).`;
  if (parts.length === 0) return open;
  const tripNotes: string[] = [];
  if (trips.has('redis') && raw)
    tripNotes.push(
      `a job's trip is the raw BullMQ floor's step, ${n(raw.median)} ms, its add, fetch and finish: the least ` +
        `a run's hand-over to a worker process through Redis costs, once per ${steps}-step run`,
    );
  if (trips.has('pgq') && handOver)
    tripNotes.push(
      `the PostgreSQL queue's hand-over is what its runs took beyond the in-process ones before the first leaf's ` +
        `commit and after the last, timed over ${handOver.runs} runs: ${n(handOver.ms)} ms per run — the job's add ` +
        `in the enqueue's statement, its fetch by the worker, the first leaf's claim there, the end's notification ` +
        `from another process; the later leaves, the same statement, are left out`,
    );
  return (
    open +
    ` In this run the in-process mode — the same steps with no queue at all — took ${parts.join(', and ')}` +
    (tripNotes.length > 0 ? ` (${tripNotes.join('; ')})` : '') +
    `: bounds below what the steps themselves${trips.size > 0 ? ' (and the hand-over, where named)' : ''} cost here, so ${rows === 1 ? 'it' : 'they'} cannot be met on this machine ` +
    `in the modes named unless the in-process step itself gets faster (its own cost is the in-process reason above).`
  );
}

/** What the PostgreSQL queue's trip is made of, when a W1 goal of that mode is missed. */
function pgqTrip(
  report: BenchReport,
  pgq: number | undefined,
  local: number | undefined,
  steps: number,
): string {
  const missedHere = [...missed(report, 'W1 vs the design floor'), ...missed(report, 'W1 vs DBOS')].some(
    (t) => t.mode === PGQ,
  );
  const rt = suite(report, PGQ)?.extra?.roundTrips as RoundTrips | undefined;
  if (!missedHere || !rt || pgq === undefined || local === undefined) return '';
  const queuePerRun =
    rt.w1.statements
      .filter((s) => statementKind(s.query) === 'queue (BullMQ on PostgreSQL)')
      .reduce((sum, s) => sum + s.callsPerStep, 0) * rt.w1.steps;
  return (
    ` With the PostgreSQL queue the trip is ${n((pgq - local) * steps, 1)} ms per run: ` +
    `${n(queuePerRun, 0)} statements of BullMQ's on the database that runs the steps besides the job's add, which ` +
    `the enqueue's own statement makes (the job's fetch once the worker's LISTEN connection hears of the enqueue's ` +
    `commit, the probes of the worker's wait for the next job, the job's finish), each a transaction of its own ` +
    `(committed without waiting for the disk) and a round trip where Redis answers a command in microseconds.`
  );
}

/** The timed stretches of a distributed mode's W1 run against the in-process mode's ("Where a W1 run's time goes"). */
function timedTrip(report: BenchReport, mode: string, name: string): string {
  const timeline = (m: string): W1Timeline | undefined =>
    suite(report, m)?.extra?.w1Timeline as W1Timeline | undefined;
  const t = timeline(mode);
  const l = timeline(LOCAL);
  const missedHere = [...missed(report, 'W1 vs the design floor'), ...missed(report, 'W1 vs DBOS')].some(
    (g) => g.mode === mode,
  );
  if (!t || !l || !missedHere) return '';
  const d = (a: number, b: number): string => `${a - b >= 0 ? '+' : '−'}${n(Math.abs(a - b))}`;
  return (
    ` Timed (${t.runs} more runs each, "Where a W1 run's time goes"), ${name}'s run took ${d(t.totalMs, l.totalMs)} ms ` +
    `over the in-process one: the enqueue ${d(t.enqueueMs, l.enqueueMs)} (${mode === PGQ ? "the job's add, within its statement" : "the job's add after the commit"}), to the ` +
    `first leaf's commit ${d(t.toFirstCommitMs, l.toFirstCommitMs)} (the job's trip to the worker and the first ` +
    `leaf's claim there), the ${t.steps - 1} later leaves ${d(t.perLeafMs * (t.steps - 1), l.perLeafMs * (l.steps - 1))} ` +
    `(${n(t.perLeafMs, 3)} ms a leaf against ${n(l.perLeafMs, 3)}: the same statement, sent from another process), ` +
    `and the last commit to \`wait\` ${d(t.endToWaitMs, l.endToWaitMs)} (the end's notification, with the run's ` +
    `view, from another process).`
  );
}

function w1Reasons(report: BenchReport, covered: Set<string>): string[] {
  const rows = [...missed(report, 'W1 vs the design floor'), ...missed(report, 'W1 vs DBOS')];
  if (rows.length === 0) return [];
  const localFigure = figure(report, LOCAL, 'w1');
  const local = localFigure?.median;
  const redis = figure(report, REDIS1, 'w1')?.median;
  const pgq = figure(report, PGQ, 'w1')?.median;
  const floor = figure(report, 'floor-bullmq-upsert', 'w1');
  const rt = suite(report, REDIS1)?.extra?.roundTrips as RoundTrips | undefined;
  const steps = rt?.w1.steps ?? 20;
  const perRun = (x: number | undefined): string =>
    x === undefined || local === undefined ? '—' : n((x - local) * steps, 1);
  return [
    `**W1** (the design floor ${n(floor?.median)} ms per step, range ${n(floor?.min)}–${n(floor?.max)}): a sequential run's leaves continue on the worker that committed ` +
      `the one before, with no queue write, so a distributed leaf step costs what an in-process one does ` +
      `(marginal: ${n(marginal(report, REDIS1)?.statements, 1)} statement and ` +
      `${n(marginal(report, REDIS1)?.writeTransactions)} write transaction). The difference is per run: ` +
      `the Redis mode takes ${n(redis)} ms per step against ${n(local)} in-process, ≈ ${perRun(redis)} ms per ` +
      `${steps}-step run (PostgreSQL queue: ${perRun(pgq)} ms) — the job's trip through the queue to another ` +
      `process and back (${n(rt ? (rt.w1.redisTotal ?? 0) : undefined, 2)} Redis commands per step, ` +
      `${n(rt ? (rt.w1.redisTotal ?? 0) * steps : undefined, 0)} per run: add, the worker's blocking pop and ` +
      `fetch, finish), the first leaf's claim by statement (in-process, the root's job claims it in its advance, ` +
      `from the enqueue's rows handed over in memory), and \`wait\` learning of the end from another process (the ` +
      `end's notification, which carries the run's view). The root's first advance is written with the enqueue ` +
      `and \`wait\` reads nothing (${n(rt?.w1.statementsTotal, 2)} statements per step all-in); what is left is the queue's own ` +
      `trip, which only a worker that finds new runs without the queue would remove.` +
      timedTrip(report, REDIS1, 'the Redis mode') +
      pgqTrip(report, pgq, local, steps) +
      timedTrip(report, PGQ, 'the PostgreSQL queue mode') +
      localBound(
        report,
        localFigure,
        steps,
        [
          { goal: 'W1 vs the design floor', what: 'the design floor', figure: floor },
          { goal: 'W1 vs DBOS', what: 'DBOS', figure: figure(report, 'dbos', 'w1') },
        ],
        covered,
      ),
  ];
}

function physicalReasons(report: BenchReport, covered: Set<string>): string[] {
  const rows = missed(report, 'W1 vs the physical floor');
  if (rows.length === 0) return [];
  const local = figure(report, LOCAL, 'w1')?.median;
  const commit = figure(report, 'floor-commit', 'w1')?.median;
  const c = counts(report, LOCAL, 'w1');
  const floorCounts = counts(report, 'floor-commit', 'w1');
  const profile = (suite(report, LOCAL)?.extra as { profileW1?: ProfileSummary } | undefined)?.profileW1;
  if (local === undefined || commit === undefined || !c) return [];
  for (const t of rows) covered.add(rowKey(t));
  const fixed = c.serverMs + commit;
  const steps = (suite(report, LOCAL)?.extra?.roundTrips as RoundTrips | undefined)?.w1.steps ?? 20;
  const cpuPerStep = profile ? profile.busyMs / (steps * (profile.runs ?? 1)) : undefined;
  return [
    `**In-process W1 ≤ 2× one durable commit** (${n(local)} ms per step against the physical floor's ` +
      `${n(commit)}): a step is one statement that settles the leaf, stores its event, advances the parent and ` +
      `inserts and claims the next leaf (${n(c.walBytes / 1024, 1)} KiB of WAL against the floor's ` +
      `${n((floorCounts?.walBytes ?? 0) / 1024, 1)}), whose execution on the server alone takes ${n(c.serverMs)} ms ` +
      `and whose commit waits for a WAL flush (${n(commit)} ms, the floor itself): ${n(fixed)} ms, ` +
      `${n(fixed / commit)}× the floor, before any work of the engine. ` +
      (profile && cpuPerStep !== undefined
        ? `In the CPU profile of a W1 run the engine's main thread is busy ${n((100 * profile.busyMs) / profile.wallMs, 0)}% ` +
          `of the time (≈ ${n(cpuPerStep)} ms per step: the leaf's run, the statement's values, its answer parsed) ` +
          `and idle the rest, waiting on PostgreSQL. `
        : '') +
      `2× the floor (${n(2 * commit)} ms) would leave ${n(2 * commit - fixed)} ms per step for the engine's CPU ` +
      `and for handing each round trip between the engine, the PostgreSQL backend and the WAL writer on ` +
      `${report.machine.cores} cores` +
      (cpuPerStep !== undefined && cpuPerStep > 2 * commit - fixed
        ? `, less than the engine's CPU per step alone: not reachable by removing waits. `
        : `. `) +
      `What would move it: fewer row ` +
      `versions per step (the leaf's insert and its completion as one row write when the step is short), a ` +
      `smaller statement answer, less CPU per step in the engine.`,
  ];
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
export function reasons33(report: BenchReport): { lines: string[]; unexplained: Target[] } {
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
    (t) => t.issue === 33 && t.verdict === 'inconclusive' && t.met === true && !covered.has(rowKey(t)),
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
      t.issue === 33 && (t.verdict === 'not met' || t.verdict === 'inconclusive') && !covered.has(rowKey(t)),
  );
  return { lines, unexplained };
}

/**
 * The reasons, as bullet points ('' when every goal is met). A goal row no computed reason explains is listed as
 * open, with its figure and verdict, so that no miss goes without a word.
 */
export function why33(report: BenchReport): string {
  const { lines, unexplained } = reasons33(report);
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
