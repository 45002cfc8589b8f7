/**
 * The reasons for missed W1 goals per mode: of the distributed modes (the queue's trip per run, timed and counted,
 * and whether the in-process steps alone already bound the goal) and of the in-process mode against the physical
 * floor (what one step's statement and commit cost before any work of the engine).
 */
import type { RoundTrips } from '../agentloom/breakdown.js';
import type { ProfileSummary } from '../agentloom/profile.js';
import type { W1Timeline } from '../agentloom/timeline.js';
import type { Figure } from '../measure.js';
import { LOCAL, missed, n, PGQ, REDIS1, rowKey, shortLabel } from './reason-lookups.js';
import { statementKind } from './sections.js';
import { counts, figure, marginal, suite, type BenchReport, type Target } from './shape.js';
import { plusFigure, ratioOf, shiftFigure } from './spread.js';

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

export function w1Reasons(report: BenchReport, covered: Set<string>): string[] {
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

export function physicalReasons(report: BenchReport, covered: Set<string>): string[] {
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
