/**
 * The sections of BENCHMARKS.md on the distributed modes: the goals table (per distributed mode: met / not met / inconclusive, see
 * spread.ts) and "Where a step's round trips go" (counted PostgreSQL statements by kind and Redis commands by
 * sender and by command, per leaf step, agentloom/breakdown.ts) and "Where a W1 run's time goes" (timed stretches
 * of W1 runs, agentloom/timeline.ts).
 */
import type { RoundTrips, RoundTripWindow } from '../agentloom/breakdown.js';
import type { W1Timeline, W3Timeline } from '../agentloom/timeline.js';
import { GOAL_MODES, GOAL_ROWS, LOCAL_GOAL_MODE } from './goals.js';
import { labelOf, suite, type BenchReport, type Target } from './shape.js';

const n = (value: number | undefined, digits = 2): string =>
  value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The verdict of a target as a table cell. */
export function verdictCell(t: Target): string {
  const v = t.verdict ?? (t.met === undefined ? 'not measured' : t.met ? 'met' : 'not met');
  if (v === 'inconclusive')
    return `**inconclusive**: spread too wide to conclude (the median says ${t.met ? 'met' : 'not met'})`;
  return v === 'not measured' ? 'not measured' : `**${v}**`;
}

const SHORT_MODE: Record<string, string> = {
  [LOCAL_GOAL_MODE]: 'PostgreSQL + in-process queue',
  'agentloom-pg-redis-1': 'BullMQ/Redis, 1 worker process',
  'agentloom-pg-redis-2': 'BullMQ/Redis, 2 worker processes',
  'agentloom-pg-pgqueue-1': 'PostgreSQL queue, 1 worker process',
};

/** The goals per mode: one row per goal and mode. */
export function goalsTable(report: BenchReport): string {
  const goals = (report.targets ?? []).filter((t) => t.mode !== undefined);
  const modes = [LOCAL_GOAL_MODE, ...GOAL_MODES].filter((m) =>
    goals.some((g) => g.mode === m && g.verdict !== 'not measured'),
  );
  if (modes.length === 0) return '';
  const rows = GOAL_ROWS.flatMap((name) =>
    modes.flatMap((m) => {
      const t = goals.find((g) => g.mode === m && g.name === name);
      return t ? [[name, SHORT_MODE[m] ?? m, t.goal, t.actual, verdictCell(t)]] : [];
    }),
  );
  const tally = (v: string): number =>
    goals.filter((g) => modes.includes(g.mode as never) && g.verdict === v).length;
  return `${table(['goal', 'mode', 'bound', 'this run', 'verdict'], rows)}

Met: **${tally('met')}**, not met: **${tally('not met')}**, inconclusive: **${tally('inconclusive')}**.`;
}

/** The kind of an agentloom (or queue) statement, by its normalised text. */
export function statementKind(query: string): string {
  // An EXECUTE of a statement prepared with SQL PREPARE (the engine's batches) is counted under the PREPARE's
  // text (pg_stat_statements tracks neither PREPARE nor EXECUTE themselves): classify the statement inside.
  const q = query
    .trim()
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/^prepare \S+ as /, '');
  if (/^(begin|commit|rollback|savepoint|release|start transaction|end)\b/.test(q)) return 'BEGIN / COMMIT';
  // Before the queue's: with the PostgreSQL queue, the enqueue's statement also adds the run's first job.
  if (/insert into sessions/.test(q)) return 'enqueue (session, invocation, root node)';
  if (/^--/.test(q) || /^(listen|unlisten|notify)\b/.test(q) || /\bbullmq|next_delay\(/.test(q))
    return 'queue (BullMQ on PostgreSQL)';
  if (/^select (json_build_object\((\$\d+|'inv'), )?row_to_json\(i\)/.test(q))
    return "wait's read of the invocation";
  if (/claimed as \( update nodes/.test(q) || /lease_owner = \$/.test(q)) return 'claim a step';
  if (/^with p as \(/.test(q)) return 'step commit (settle, advance parent, next leaf)';
  if (/pg_notify|^select pg_/.test(q)) return 'notify / admin';
  return `other: ${q.slice(0, 40)}`;
}

function kinds(statements: RoundTripWindow['statements']): Record<string, number> {
  // Results written before the statements were stored raw hold the kinds already.
  if (!Array.isArray(statements)) return statements as Record<string, number>;
  const out: Record<string, number> = {};
  for (const s of statements) {
    const kind = statementKind(s.query);
    out[kind] = (out[kind] ?? 0) + s.callsPerStep;
  }
  return out;
}

function windowRows(w1: RoundTripWindow, w2: RoundTripWindow): string[][] {
  const rows: string[][] = [];
  const section = (
    title: string,
    a: Record<string, number> | undefined,
    b: Record<string, number> | undefined,
    limit = 12,
  ): void => {
    const keys = [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])]
      .sort((x, y) => (b?.[y] ?? a?.[y] ?? 0) - (b?.[x] ?? a?.[x] ?? 0))
      .slice(0, limit);
    for (const k of keys) rows.push([`${title}: ${k}`, n(a?.[k]), n(b?.[k])]);
  };
  rows.push(['**PostgreSQL statements**', `**${n(w1.statementsTotal)}**`, `**${n(w2.statementsTotal)}**`]);
  section('PG', kinds(w1.statements), kinds(w2.statements));
  if (w1.redisTotal !== undefined || w2.redisTotal !== undefined) {
    rows.push([
      '**Redis commands sent (round trips; a pipeline counts each command)**',
      `**${n(w1.redisTotal)}**`,
      `**${n(w2.redisTotal)}**`,
    ]);
    section('sent by', w1.redisBySender, w2.redisBySender);
    section('Redis', w1.redisByCommand, w2.redisByCommand);
    rows.push([
      'Redis commands run inside Lua scripts (no round trip)',
      n(w1.redisInScripts),
      n(w2.redisInScripts),
    ]);
  }
  return rows;
}

/** "Where a step's round trips go": for each PostgreSQL mode that counted them. */
export function roundTripsSection(report: BenchReport): string {
  const modes = ['agentloom-pg-local', ...GOAL_MODES].filter((m) => suite(report, m)?.extra?.roundTrips);
  if (modes.length === 0) return '';
  const parts = modes.map((m) => {
    const r = suite(report, m)?.extra?.roundTrips as RoundTrips;
    return `#### ${labelOf(report, m)}\n\n${table(
      ['per leaf step', `W1 (one run, ${r.w1.steps} steps)`, `W2 (one run, ${r.w2.steps} steps)`],
      windowRows(r.w1, r.w2),
    )}\n`;
  });
  return `## Where a step's round trips go

Counted, not timed (so it holds on a busy machine): one W1 and one W2 run per mode after its measured runs, all-in per leaf step (enqueue and \`wait\` included). PostgreSQL: every statement of the mode's database (pg_stat_statements), by kind from its text — the enqueue (session, invocation, root node), a step's claim, a step's commit (settles the leaf, advances the parent, inserts and claims the next leaf), \`wait\`'s read, the queue's own statements (PostgreSQL-only mode), BEGIN/COMMIT; an EXECUTE of one of the engine's prepared batch statements counts as the statement it runs. Statements are not round trips: steps that end together go to the server as one batch of EXECUTEs. Redis: every command Redis executed between two markers (MONITOR), by the process that sent it (its TCP port among each process's sockets) and by name (an EVALSHA named by its BullMQ script); commands a Lua script runs inside Redis are counted apart. A worker's idle polling (blocking pops that time out) counts too, as it does in production.

${parts.join('\n')}`;
}

/** A timeline's "vs in-process" cell: the mode's total minus the in-process mode's ('—' for that mode itself). */
function versusLocal(mode: string, total: number, localTotal: number | undefined): string {
  if (localTotal === undefined || mode === 'agentloom-pg-local') return '—';
  return `${total - localTotal >= 0 ? '+' : ''}${n(total - localTotal)}`;
}

/** "Where a W1 run's time goes": the timed stretches of each PostgreSQL mode's W1 runs (agentloom/timeline.ts). */
export function timelineSection(report: BenchReport): string {
  const modes = ['agentloom-pg-local', ...GOAL_MODES].filter((m) => suite(report, m)?.extra?.w1Timeline);
  if (modes.length === 0) return '';
  const local = suite(report, 'agentloom-pg-local')?.extra?.w1Timeline as W1Timeline | undefined;
  const rows = modes.map((m) => {
    const t = suite(report, m)?.extra?.w1Timeline as W1Timeline;
    const extra = versusLocal(m, t.totalMs, local?.totalMs);
    return [
      labelOf(report, m),
      n(t.enqueueMs),
      n(t.toFirstCommitMs),
      `${n(t.perLeafMs, 3)} (× ${t.steps - 1} = ${n(t.perLeafMs * (t.steps - 1), 1)})`,
      n(t.endToWaitMs),
      `**${n(t.totalMs, 1)}**`,
      extra,
    ];
  });
  const runs = (suite(report, modes[0] as string)?.extra?.w1Timeline as W1Timeline).runs;
  return `## Where a W1 run's time goes

Timed: ${runs} more W1 runs per mode after its measured runs (round 1), each cut into stretches by the bench process's clock and the timestamps PostgreSQL wrote (same machine, same clock); medians over the runs, in ms, so the stretches need not add up to the total. **enqueue**: the \`enqueue\` call (its statement; with Redis also the job's add after the commit, while the PostgreSQL queue's add is part of the enqueue's statement). **→ first leaf's commit**: from \`enqueue\` returning to the start of the first leaf's commit statement (distributed: the job's trip to a worker, the first leaf's claim there, its run). **per leaf**: from the first leaf's commit to the last one's, per leaf (its run and its commit). **last commit → wait**: the last commit (which ends the invocation), the end's notification to the bench process (which carries the run's view, so \`wait\` reads nothing more, unless the view is too large for a notification).

${table(['mode', 'enqueue', "→ first leaf's commit", 'per leaf', 'last commit → wait', 'total', 'vs in-process'], rows)}
`;
}

/** "Where a W3 run's time goes": the timed stretches of a W3 run per PostgreSQL mode (round 1). */
export function w3TimelineSection(report: BenchReport): string {
  const modes = ['agentloom-pg-local', ...GOAL_MODES].filter((m) => suite(report, m)?.extra?.w3Timeline);
  if (modes.length === 0) return '';
  const of = (m: string): W3Timeline => suite(report, m)?.extra?.w3Timeline as W3Timeline;
  const local = modes.includes('agentloom-pg-local') ? of('agentloom-pg-local') : undefined;
  const rows = modes.map((m) => {
    const t = of(m);
    const extra = versusLocal(m, t.totalMs, local?.totalMs);
    return [
      labelOf(report, m),
      n(t.enqueueMs),
      n(t.toFanOutMs),
      `${n(t.branchesMs)} (${n(t.endStatements, 0)} statement${t.endStatements === 1 ? '' : 's'})`,
      n(t.toJoinMs),
      n(t.joinMs),
      n(t.endToWaitMs),
      `**${n(t.totalMs, 1)}**`,
      extra,
    ];
  });
  const first = of(modes[0] as string);
  return `## Where a W3 run's time goes

Timed like W1: ${first.runs} more W3 runs per mode (round 1), cut by the bench process's clock and the timestamps PostgreSQL wrote (a node's and an event's \`created_at\`: the start of the statement that wrote it); medians, in ms. **enqueue**: the \`enqueue\` call. **→ fan-out**: from \`enqueue\` returning to the statement that inserts the ${first.branches} branches (distributed: the job's trip to a worker; every mode: the root's and the parallel's advances). **branches, less the sleep**: from that statement to the last statement of branch ends, less the ${first.sleepMs} ms every branch sleeps (the fan-out statement and its answer, the branches' start, their timers, their ends gathered into statements). **→ join's insert**: from the last branch ends' statement to the statement that ends the parallel and inserts the join (the first statement itself, the parallel's end decided). **join**: that statement, the join's run, to its commit's start. **end → wait**: the join's commit (which ends the invocation) and the end's notification to \`wait\`.

${table(['mode', 'enqueue', '→ fan-out', 'branches, less the sleep', "→ join's insert", 'join', 'end → wait', 'total', 'vs in-process'], rows)}
`;
}
