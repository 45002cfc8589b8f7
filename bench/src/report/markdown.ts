/**
 * BENCHMARKS.md from one run's report: machine and versions, every figure, ratios against each peer and the
 * floors, the performance budget's targets and the goals per mode, database counters, where the time goes (per-statement breakdown and a CPU
 * profile), W4–W6, and how it was measured.
 */
import { relative, dirname } from 'node:path';
import type { CountsPerStep, Figure, SuiteResult } from '../measure.js';
import type { ProfileSummary } from '../agentloom/profile.js';
import { analysis } from './analysis.js';
import { baselineSection } from './baseline.js';
import { best, counts, figure, labelOf, marginal, suite, type BenchReport, type Workload } from './shape.js';
import { PG_MODES } from './targets.js';
import { ratioOf, relativeSpread, rangeOf } from './spread.js';
import {
  goalsTable,
  roundTripsSection,
  timelineSection,
  verdictCell,
  w3TimelineSection,
} from './sections.js';
import { whyGoalsMissed } from './reasons.js';
import { scalingSection } from './scaling.js';

const AGENTLOOM = [
  'agentloom-pglite',
  'agentloom-pg-local',
  'agentloom-pg-redis-1',
  'agentloom-pg-redis-2',
  'agentloom-pg-pgqueue-1',
];
const OTHERS = ['dbos', 'langgraph', 'floor-bullmq', 'floor-bullmq-upsert', 'floor-commit'];
const SHORT: Record<string, string> = {
  dbos: 'DBOS',
  langgraph: 'LangGraph',
  'floor-bullmq': 'raw BullMQ',
  'floor-bullmq-upsert': 'design floor',
  'floor-commit': 'physical floor',
};

const n = (value: number | undefined, digits = 2): string =>
  value === undefined || !Number.isFinite(value)
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Median, range (of the rounds' medians; of the runs with one round) and relative spread. */
function cell(f: Figure | undefined, digits: number): string {
  if (!f) return '—';
  const r = rangeOf(f);
  return `**${n(f.median, digits)}** (${n(r.low, digits)}–${n(r.high, digits)}, ±${n((100 * relativeSpread(f)) / 2, 0)}%)`;
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function figuresTable(report: BenchReport): string {
  const rows = report.suites
    .filter(
      (s) =>
        s.figures.w1 !== undefined ||
        s.figures.w2 !== undefined ||
        s.figures.w3 !== undefined ||
        (s.kind !== 'extra' && s.errors.length > 0 && s.suite !== 'scaling-redis'),
    )
    .map((s) => [
      s.label,
      cell(s.figures.w1, 2),
      cell(s.figures.w2, 0),
      cell(s.figures.w3, 0),
      s.errors.length > 0 ? `failed: ${s.errors[0]?.split('\n')[0]}` : '',
    ]);
  return table(['system', 'W1 ms/step', 'W2 steps/s', 'W3 wall ms', 'note'], rows);
}

function targetsTable(report: BenchReport): string {
  const rows = (report.targets ?? [])
    .filter((t) => t.mode === undefined)
    .map((t) => [t.name, t.goal, t.actual, verdictCell(t)]);
  return table(['target', 'goal', 'this run', ''], rows);
}

function ratiosTable(report: BenchReport, workload: Workload): string {
  const others = OTHERS.filter((o) => figure(report, o, workload));
  const rows = AGENTLOOM.filter((a) => figure(report, a, workload)).map((a) => {
    const mine = figure(report, a, workload) as Figure;
    return [
      labelOf(report, a),
      ...others.map((o) => {
        const r = ratioOf(mine, figure(report, o, workload) as Figure);
        return r.low === r.high ? `${n(r.value)}×` : `${n(r.value)}× (${n(r.low)}–${n(r.high)})`;
      }),
    ];
  });
  return table(['agentloom mode', ...others.map((o) => SHORT[o] ?? o)], rows);
}

function countsRow(label: string, c: CountsPerStep | undefined): string[] {
  if (!c) return [label, '—', '—', '—', '—', '—', '—'];
  return [
    label,
    n(c.statements, 1),
    n(c.statementsWithoutTxControl, 1),
    n(c.writeTransactions, 2),
    n(c.commits, 2),
    n(c.walSyncs, 2),
    n(c.walBytes, 0),
  ];
}

function countsTable(report: BenchReport): string {
  const header = [
    'system, workload',
    'statements',
    'without BEGIN/COMMIT',
    'write transactions',
    'commits (all)',
    'WAL syncs',
    'WAL bytes',
  ];
  const rows: string[][] = [];
  for (const name of [...PG_MODES, 'dbos', 'langgraph', 'floor-bullmq-upsert', 'floor-commit']) {
    for (const w of ['w1', 'w2', 'w3']) {
      const c = counts(report, name, w);
      if (c) rows.push(countsRow(`${labelOf(report, name)}, ${w.toUpperCase()}`, c));
    }
  }
  return table(header, rows);
}

function marginalTable(report: BenchReport): string {
  const rows = PG_MODES.filter((m) => marginal(report, m)).map((m) => {
    const c = marginal(report, m) as Record<string, number>;
    const per = (c.perInvocationOverhead ?? {}) as unknown as Record<string, number>;
    return [
      labelOf(report, m),
      n(c.statements, 1),
      n(c.statementsWithoutTxControl, 1),
      n(c.writeTransactions, 2),
      n(c.walBytes, 0),
      n(per.statements, 1),
      n(per.writeTransactions, 1),
    ];
  });
  return table(
    [
      'mode',
      'statements / leaf step',
      'without BEGIN/COMMIT',
      'write transactions / leaf step',
      'WAL bytes / leaf step',
      'statements / invocation (fixed)',
      'write transactions / invocation (fixed)',
    ],
    rows,
  );
}

function statementsTable(c: CountsPerStep): string {
  return table(
    ['calls / step', 'mean ms', 'ms / step', 'statement (normalised by pg_stat_statements)'],
    c.topStatements.map((s) => [
      n(s.callsPerStep, 2),
      n(s.meanMs, 3),
      n(s.totalMsPerStep, 3),
      `\`${s.query.slice(0, 160)}\``,
    ]),
  );
}

function profileSection(title: string, p: ProfileSummary | undefined): string {
  if (!p) return '';
  const areas = table(
    ['area', 'self ms', '% of wall'],
    p.byArea.slice(0, 14).map((a) => [a.name, n(a.selfMs, 0), n(a.percent, 1)]),
  );
  const fns = table(
    ['function', 'self ms', '% of wall'],
    p.byFunction.slice(0, 15).map((a) => [`\`${a.name}\``, n(a.selfMs, 0), n(a.percent, 1)]),
  );
  return `#### ${title}\n\nWall ${n(p.wallMs, 0)} ms (the profiler's own start/stop excluded), main thread busy ${n(p.busyMs, 0)} ms (${n((100 * p.busyMs) / p.wallMs, 0)}%).\n\n${areas}\n\n${fns}\n`;
}

function statementKinds(c: CountsPerStep): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const s of c.topStatements) {
    // An EXECUTE of a statement prepared by SQL PREPARE is counted under the PREPARE's text.
    const q = s.query
      .trim()
      .toLowerCase()
      .replace(/^prepare\s+\S+\s+as\s+/, '');
    const kind = /^(begin|commit|rollback|savepoint|release)/.test(q)
      ? 'transaction control'
      : /pg_notify|^notify/.test(q)
        ? 'notify'
        : /^with/.test(q)
          ? /\b(insert|update|delete)\b/.test(q)
            ? 'write (CTE)'
            : 'select (CTE)'
          : (/^(\w+)/.exec(q)?.[1] ?? 'other');
    kinds[kind] = (kinds[kind] ?? 0) + s.callsPerStep;
  }
  return kinds;
}

function whereTimeGoes(report: BenchReport): string {
  const parts: string[] = [];
  const w1 = best(report, PG_MODES, 'w1');
  const local = suite(report, 'agentloom-pg-local');
  const focus = [...new Set([w1?.name, 'agentloom-pg-local'].filter((x): x is string => x !== undefined))];
  for (const name of focus) {
    const c = counts(report, name, 'w1');
    if (!c) continue;
    const kinds = Object.entries(statementKinds(c))
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${n(v, 1)}`)
      .join(', ');
    parts.push(
      `#### Per-statement breakdown, W1, ${labelOf(report, name)}\n\n` +
        `Per leaf step (all-in: the 5 measured invocations' statements / 100 leaf steps, enqueue and wait included): ` +
        `${n(c.statements, 1)} statements (${kinds}), ${n(c.writeTransactions, 2)} write transactions, ` +
        `${n(c.commits, 2)} commits, ${n(c.walSyncs, 2)} WAL syncs. Server time in statements: ` +
        `${n(
          c.topStatements.reduce((sum, s) => sum + s.totalMsPerStep, 0),
          2,
        )} ms per step of ` +
        `${n(figure(report, name, 'w1')?.median, 2)} ms.\n\n${statementsTable(c)}\n`,
    );
  }
  const extra = local?.extra as { profileW1?: ProfileSummary; profileW2?: ProfileSummary } | undefined;
  const runs = (p: ProfileSummary | undefined): string =>
    p?.runs && p.runs > 1 ? `${p.runs} runs` : 'one run';
  parts.push(
    profileSection(
      `CPU profile, W1 (${runs(extra?.profileW1)}), PostgreSQL + in-process queue`,
      extra?.profileW1,
    ),
  );
  parts.push(
    profileSection(
      `CPU profile, W2 (${runs(extra?.profileW2)}), PostgreSQL + in-process queue`,
      extra?.profileW2,
    ),
  );
  return parts.filter(Boolean).join('\n');
}

function extraSections(report: BenchReport): string {
  const out: string[] = [];
  const tracing = suite(report, 'tracing');
  if (tracing?.extra) {
    const e = tracing.extra as { off: Figure; on: Figure; costPerStepMs: number; payloads: number };
    const row = (name: string, f: Figure): string[] => [
      name,
      `**${n(f.median, 2)}**`,
      n(f.min, 2),
      n(f.max, 2),
      String(f.samples.length),
    ];
    out.push(
      `### W1 with tracing off and on\n\nPostgreSQL + in-process queue; off and on phases alternate (a phase: an engine of its own, a warm-up run, then 5 W1 runs whose median is its sample). On: agentloom's id generator and run sampler (always on), a batch span processor exporting OTLP/HTTP (protobuf) to a receiver in the bench process (${n(e.payloads, 0)} payloads). Cost of tracing: **${n(e.costPerStepMs, 3)} ms per step** (difference of medians).\n\n${table(['tracing', 'median ms/step', 'min', 'max', 'phases'], [row('off', e.off), row('on', e.on)])}\n${errorsOf(tracing)}`,
    );
  }
  const w4 = suite(report, 'w4');
  if (w4) {
    const rows = Object.values((w4.extra ?? {}) as Record<string, Record<string, unknown>>).map((r) => [
      `${n(Number(r.leaseMs), 0)} ms`,
      `**${n(Number(r.median), 2)}**`,
      n(Number(r.min), 2),
      n(Number(r.max), 2),
      String((r.samples as number[] | undefined)?.length ?? 0),
    ]);
    out.push(
      `### W4 — takeover after SIGKILL\n\nSeconds from SIGKILL of the worker holding a step (found by \`nodes.lease_owner\`) to another worker's claim of it (\`nodes.attempt\` up, another owner). Two worker processes, BullMQ on Redis.\n\n${table(['lease', 'median s', 'min s', 'max s', 'runs'], rows)}\n${errorsOf(w4)}`,
    );
  }
  const w5 = suite(report, 'w5');
  if (w5?.extra) {
    const e = w5.extra as Record<string, number> & { tableBytesPerPausedRun?: Record<string, number> };
    const mib = (b: number | undefined): string => (b === undefined ? '—' : `${n(b / 2 ** 20, 1)} MiB`);
    const tables = Object.entries(e.tableBytesPerPausedRun ?? {})
      .map(([t, b]) => `${t} ${n(b, 0)}`)
      .join(', ');
    out.push(
      `### W5 — ${n(e.paused, 0)} paused invocations\n\n` +
        table(
          ['figure', 'value'],
          [
            [
              'worker RSS before (after a warm-up of ' + n(e.warmup, 0) + ' paused runs)',
              mib(e.rssBeforeBytes),
            ],
            ['worker RSS right after the last pause', mib(e.rssAtEndBytes)],
            [
              'worker RSS after 10 s idle (lowest of 5 readings; same for the reading before)',
              mib(e.rssAfterBytes),
            ],
            [
              'RSS growth',
              `**${mib(e.rssGrowthBytes)}** (${n(e.rssGrowthPerPausedRunBytes, 0)} bytes per paused run)`,
            ],
            [
              'database bytes per paused run (pg_database_size delta / runs)',
              `**${n(e.databaseBytesPerPausedRun, 0)}**`,
            ],
            ['by table (bytes per paused run, indexes and TOAST included)', tables],
            [
              'paused runs created per second (enqueue → paused, 32 enqueues in flight)',
              n(e.pausedPerSecond, 0),
            ],
          ],
        ) +
        `\n${errorsOf(w5)}`,
    );
  }
  const w6 = suite(report, 'w6');
  if (w6?.extra) {
    const rows = Object.values(w6.extra as Record<string, Record<string, unknown>>).map((r) => {
      const c = r.commitToReceivedMs as Record<string, number>;
      const e = r.emittedToReceivedMs as Record<string, number>;
      return [
        String(r.label),
        `**${n(c.p50)}**`,
        `**${n(c.p99)}**`,
        n(c.max),
        n(e.p50),
        n(e.p99),
        String(c.count),
        `${n(Number(r.clockOffsetMs), 3)} ± ${n(Number(r.clockUncertaintyMs), 3)}`,
      ];
    });
    out.push(
      `### W6 — event commit → follower\n\n` +
        table(
          [
            'mode',
            'commit → received p50 ms',
            'p99 ms',
            'max ms',
            'emitted → received p50 ms',
            'p99 ms',
            'events',
            'clock offset ms (PG − Node)',
          ],
          rows,
        ) +
        `\n${errorsOf(w6)}`,
    );
  }
  return out.join('\n\n');
}

function errorsOf(s: SuiteResult): string {
  return s.errors.length === 0 ? '' : `\nFailed: \`${s.errors.join(' / ').slice(0, 600)}\`\n`;
}

function machineTable(report: BenchReport): string {
  const m = report.machine;
  const rows: string[][] = [
    ['CPU', `${m.cores} × ${m.cpuModel}`],
    ['memory', `${m.memoryGiB} GiB`],
    ['kernel', m.kernel],
    ['Node.js', m.node],
    [
      'PostgreSQL',
      `${m.postgres} (fsync=${report.postgresSettings.fsync}, synchronous_commit=${report.postgresSettings.synchronous_commit}, full_page_writes=${report.postgresSettings.full_page_writes}, shared_buffers=${report.postgresSettings.shared_buffers})`,
    ],
    ['Redis', `${m.redis} (no persistence)`],
    [
      'agentloom',
      `${m.agentloom.version} at ${m.agentloom.commit}${m.agentloom.dirty ? ' (with uncommitted changes in src/)' : ''}`,
    ],
    ...Object.entries(m.packages).map(([k, v]) => [k, v]),
    [
      'load average (1/5/15 min) before → after',
      `${report.loadAverage.before.join(' / ')} → ${report.loadAverage.after.join(' / ')}`,
    ],
  ];
  return table(['', ''], rows);
}

function method(report: BenchReport): string {
  const s = report.scale;
  return `## How it was measured

- One run of \`npm run bench\` (${s.name} scale): every system in its own Node.js process, one after another, against one PostgreSQL ${report.machine.postgres} and one Redis started for the run on loopback. The comparison suites (floors, peers, agentloom's modes, scaling) run in **${s.rounds} interleaved round(s)** (floor, DBOS, …, agentloom's modes, then again)${s.warmupRounds ? ` after ${s.warmupRounds} warm-up round(s) that count for nothing (their figures are in results.json, \`roundResults\`, marked \`warmup\`)` : ''}, a fresh process each time; a round's figure is the **median of ${s.runs} measured runs after ${s.warmup} warm-up run(s)**${s.w1Runs ? ` (W1: ${s.w1Runs} runs, each one invocation of 20 steps)` : ''}, the reported figure the median of the rounds' figures, with their range; a ratio of two systems is taken round by round (each round's figure of one ÷ the same round's of the other) and reported as the median of those with their range. Counters, the marginal step, the profiles and the round-trip counts are measured in round 1. The machine was not otherwise idle (see the load average); compare figures of one run only.
- **W1**: one invocation of a 20-leaf sequence, ms per leaf step = wall time / 20. **W2**: ${s.w2Invocations} invocations of a 5-leaf sequence started at once, steps/s = ${s.w2Invocations * 5} / wall time. **W3**: 50 parallel leaves that sleep 200 ms, then a join leaf; wall ms. For agentloom the clock runs from before \`engine.enqueue\` to \`engine.wait\` seeing the invocation completed (so enqueueing is included); a leaf is a \`BaseAgent\` subclass whose \`runImpl\` yields one \`createEvent\`.
- **agentloom modes** (a fresh database each): embedded PGlite on disk (in-process queue); PostgreSQL + in-process queue (\`queue: 'local'\`, concurrency 64); PostgreSQL + BullMQ on Redis with 1 and with 2 \`agentloom worker\` processes (\`node bin/agentloom.js worker --apps bench/src/agentloom/apps.ts --queue redis --concurrency 64\`, default lease and log level), the bench process enqueuing through \`createEngine({ worker: false })\`; PostgreSQL-only (\`--queue postgres\`, 1 worker process).
- **DBOS Transact**: a workflow of \`DBOS.runStep\` calls, system database on the same server (pool of 20), workflows started in-process; W3's 50 steps started together with Promise.all, then a join step. **LangGraph JS**: a StateGraph whose nodes each append one entry to a list channel, PostgresSaver over a pool of 20, \`durability: 'async'\`, one thread per invocation. **Raw BullMQ**: a chain where each job enqueues the next (producer and worker in one process, concurrency 64). **Design floor**: the same chain with one \`INSERT … ON CONFLICT DO UPDATE\` per step into a regular table, committed before the next job is enqueued. **Physical floor**: autocommit INSERTs into a regular (WAL-logged, not TEMPORARY) table on one connection; its W2 is ${s.w2Invocations} callers × 5 commits over 20 connections.
- **Counters** (PostgreSQL): statements from pg_stat_statements (\`track = top\`, reset per window, filtered to the system's database, so the harness's own queries, made from the \`postgres\` database, are not counted); write transactions = Transaction/COMMIT records in the WAL of the window (pg_walinspect; read-only transactions write none); WAL bytes = LSN difference; commits (pg_stat_database.xact_commit, read-only included) and WAL syncs (pg_stat_wal.wal_sync) are read after 11 s of quiet (backends flush these statistics lazily), less the background rate of an idle window of the same length (the reconciler, the PostgreSQL queue's polling). agentloom's W1/W2 counts cover the measured runs; peers' and floors' cover warm-up and measured runs. "Marginal" = (statements of a 20-leaf run − those of a 5-leaf run) / 15: the cost of one more leaf step, without what each invocation costs once.
- **W4**: two worker processes; a leaf that sleeps; the worker holding it (its pid in \`nodes.lease_owner\`) is SIGKILLed; the harness polls \`nodes\` every 10 ms until \`attempt\` rose under another owner. ${s.w4DefaultLeaseReps} run(s) with the default lease (15 s), ${s.w4ShortLeaseReps} with \`--lease-ms ${s.w4ShortLeaseMs}\`.
- **W5**: one worker process; an LlmAgent whose (non-recording) model calls a FunctionTool with \`requireConfirmation\`; ${s.w5Warmup} unmeasured pauses, then ${s.w5Paused} measured ones; RSS from /proc/<pid>/status VmRSS of the worker process.
- **W6**: the server is restarted with \`track_commit_timestamp = on\` for this suite only. A sequence of ${s.w6Leaves} leaves that wait ${s.w6GapMs} ms and then emit an event whose text is the wall clock; a follower (\`engine.events(id, { follow: true })\`) in the bench process records when each event arrives. commit → received uses \`pg_xact_commit_timestamp(xmin)\` of the event row (PostgreSQL's clock; the offset to Node's clock is measured with \`clock_timestamp()\` and applied; it is the same host clock, so it is ~0); emitted → received uses the leaf's own stamp, taken before the insert. ${s.w6Invocations} followed invocations per mode after one warm-up (${s.w6Invocations * s.w6Leaves} events).
- **Scaling**: W2 with ${(s.scalingWorkers ?? [1, 2, 4]).join(', ')} \`agentloom worker\` processes on PostgreSQL + BullMQ/Redis, a fresh database and fresh workers for each count; CPU time from /proc/<pid>/stat of the workers, of the postmaster and its children, of Redis and of the bench process, the machine's busy share from /proc/stat; the worker's profile: \`node --cpu-prof\` on a worker of its own, its samples cut to one W2 run.
- **Scaled for this machine** (2 cores, this run ${n(report.minutes, 0)} min with ${s.rounds ?? 1} rounds${s.warmupRounds ? ` and ${s.warmupRounds} warm-up` : ''}): ${s.runs} measured runs per workload${s.w1Runs ? ` (W1: ${s.w1Runs})` : ''}; W4 ${s.w4DefaultLeaseReps} + ${s.w4ShortLeaseReps} repetitions; W6 ${s.w6Invocations * s.w6Leaves} events per mode. W1–W3 and W5 are at full size.

Reproduce: \`npm run bench\` at the repository root (installs bench/'s dependencies when missing). \`npm run bench -- --quick\` runs a tiny version into bench/results/quick/; \`-- --only dbos,agentloom-pg-local\` runs some suites.`;
}

function rounds(report: BenchReport): number {
  return report.scale.rounds ?? 1;
}

/** The whole of BENCHMARKS.md. */
export function renderMarkdown(
  report: BenchReport,
  paths: { reportPath: string; chartPath: string; jsonPath: string; scalingChartPath?: string },
): string {
  const rel = (p: string): string => relative(dirname(paths.reportPath), p);
  const failed = report.suites.filter((s) => s.errors.length > 0);
  return `# Benchmarks

Generated by \`npm run bench\` (bench/) on ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC in ${n(report.minutes, 1)} minutes; every figure below comes from that one run (${rounds(report)} interleaved round(s) of the comparison suites${report.scale.warmupRounds ? `, after ${report.scale.warmupRounds} unmeasured warm-up round(s)` : ''}). Raw results: [${rel(paths.jsonPath)}](${rel(paths.jsonPath)}). Workloads and targets: ARCHITECTURE.md "Performance budget" and bench/README.md.

![W1–W3 side by side](${rel(paths.chartPath)})

## Machine

${machineTable(report)}

## W1–W3

${rounds(report) > 1 ? `Median of the ${rounds(report)} rounds' medians (each round: ${report.scale.runs} run(s) after a warm-up${report.scale.w1Runs ? `, W1 ${report.scale.w1Runs}` : ''}, a fresh process per system), the range of the rounds' medians, and ± half that range as a share of the median.` : `Median (range, ± half the range as a share of the median) of ${report.scale.runs} runs after a warm-up.`}

${figuresTable(report)}

${failed.length > 0 ? `Failures: ${failed.map((s) => `${s.suite}: \`${s.errors.join(' / ').slice(0, 400)}\``).join('; ')}\n` : ''}
## Targets

${targetsTable(report)}

For W1 and W3 "agentloom on PostgreSQL" is the best of its PostgreSQL modes; for W2 the best of those that run on one process (the 2-worker mode is shown, not counted). A ratio is the median of the rounds' ratios (each round's figure of one system ÷ the same round's of the other) and "range" is their lowest to highest (with one round: the ratio of medians, and every ratio the two systems' ranges allow); a verdict is **inconclusive** when the goal is met at one end of that range and missed at the other (bench/README.md, "Rounds, spread and verdicts").

### Goals of the distributed modes

${goalsTable(report)}

${whyGoalsMissed(report)}

## Ratios

agentloom ÷ the other system: the median of the rounds' ratios (in brackets: their lowest to highest; with one round, every ratio the two ranges allow). W1 and W3: below 1× is faster. W2: above 1× is more throughput.

### W1 (ms per step)

${ratiosTable(report, 'w1')}

### W2 (steps per second)

${ratiosTable(report, 'w2')}

### W3 (wall ms)

${ratiosTable(report, 'w3')}

${baselineSection(report)}
## Database work per step

Per leaf step (W3: per leaf, branches and join). Statements include BEGIN/COMMIT; write transactions are commit records in the WAL.

${countsTable(report)}

Marginal cost of one more leaf step (a 20-leaf run minus a 5-leaf run, / 15), and what each invocation costs once:

${marginalTable(report)}

${scalingSection(report, paths.scalingChartPath && rel(paths.scalingChartPath))}
${roundTripsSection(report)}
${timelineSection(report)}
${w3TimelineSection(report)}
## Where the time goes

${analysis(report)}

${whereTimeGoes(report)}

## W4–W6

${extraSections(report)}

${method(report)}
`;
}
