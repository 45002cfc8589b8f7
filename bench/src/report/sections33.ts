/**
 * Issue 33's sections of BENCHMARKS.md: the goals table (per distributed mode: met / not met / inconclusive, see
 * spread.ts) and "Where a step's round trips go" (counted PostgreSQL statements by kind and Redis commands by
 * sender and by command, per leaf step, agentloom/breakdown.ts).
 */
import type { RoundTrips, RoundTripWindow } from '../agentloom/breakdown.js';
import { GOAL_MODES, GOAL_ROWS } from './goals33.js';
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
    return `**inconclusive**: spread too wide to conclude (the medians say ${t.met ? 'met' : 'not met'})`;
  return v === 'not measured' ? 'not measured' : `**${v}**`;
}

/** The goals of issue 33: one row per goal, one column per mode. */
export function goalsTable(report: BenchReport): string {
  const goals = (report.targets ?? []).filter((t) => t.issue === 33);
  if (goals.length === 0) return '';
  const modes = GOAL_MODES.filter((m) => goals.some((g) => g.mode === m && g.verdict !== 'not measured'));
  if (modes.length === 0) return '';
  const rows = GOAL_ROWS.map((name) => [
    name,
    ...modes.map((m) => {
      const t = goals.find((g) => g.mode === m && g.name === name);
      return t ? `${t.goal}: ${t.actual} — ${verdictCell(t)}` : '—';
    }),
  ]);
  const tally = (v: string): number =>
    goals.filter((g) => modes.includes(g.mode as never) && g.verdict === v).length;
  return `${table(['goal', ...modes.map((m) => labelOf(report, m))], rows)}

Met: **${tally('met')}**, not met: **${tally('not met')}**, inconclusive: **${tally('inconclusive')}**.`;
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
  section('PG', w1.statements, w2.statements);
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

Counted, not timed (so it holds on a busy machine): one W1 and one W2 run per mode after its measured runs, all-in per leaf step (enqueue and \`wait\` included). PostgreSQL: every statement of the mode's database (pg_stat_statements), by kind from its text — the enqueue (session, invocation, root node), a step's claim, a step's commit (settles the leaf, advances the parent, inserts and claims the next leaf), \`wait\`'s read, the queue's own statements (PostgreSQL-only mode), BEGIN/COMMIT, PREPARE. Redis: every command Redis executed between two markers (MONITOR), by the process that sent it (its TCP port among each process's sockets) and by name (an EVALSHA named by its BullMQ script); commands a Lua script runs inside Redis are counted apart. A worker's idle polling (blocking pops that time out) counts too, as it does in production.

${parts.join('\n')}`;
}
