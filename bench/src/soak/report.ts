/**
 * SOAK.md and its charts: the trend of each sampled series after the warm-up (a least-squares slope per 10
 * minutes), the end state of every run, and line charts drawn as the benchmark's are (a vega-lite spec compiled to
 * vega, rendered headless to SVG).
 */
import type { ProcessSample, Sample } from './sampler.js';
import type { endState } from './driver.js';

export interface SoakResult {
  startedAt: string;
  minutes: number;
  retention: string;
  warmupSeconds: number;
  samples: Sample[];
  end: ReturnType<typeof endState>;
  driverErrors: string[];
  /** Log lines at error level or above, by process, that the mix does not provoke. */
  logErrors: Record<string, string[]>;
  machine: string;
  /** Environment the soak set for the api and the workers beyond the services' URLs (e.g. MALLOC_ARENA_MAX). */
  env?: Record<string, string>;
  /** Flags of node itself in the api and the workers (e.g. --min-semi-space-size=16). */
  nodeFlags?: string[];
}

/**
 * Least-squares slope of `points` (x in seconds), per 600 s, and the half-width of its 95 % confidence interval
 * (1.96 standard errors): a slope smaller than its interval is noise.
 */
export function slopePer10Min(points: [number, number][]): { slope: number; ci95: number } {
  const valid = points.filter(([, y]) => Number.isFinite(y));
  if (valid.length < 3) return { slope: Number.NaN, ci95: Number.NaN };
  const n = valid.length;
  const mx = valid.reduce((a, [x]) => a + x, 0) / n;
  const my = valid.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of valid) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  if (den === 0) return { slope: Number.NaN, ci95: Number.NaN };
  const b = num / den;
  let sse = 0;
  for (const [x, y] of valid) sse += (y - (my + b * (x - mx))) ** 2;
  return { slope: b * 600, ci95: 1.96 * Math.sqrt(sse / (n - 2) / den) * 600 };
}

/** One series after the warm-up: first, last, min, max and slope per 10 minutes. */
export interface Trend {
  series: string;
  unit: string;
  first: number;
  last: number;
  min: number;
  max: number;
  slope: number;
  /** Half-width of the slope's 95 % confidence interval. */
  ci95: number;
}

function trend(result: SoakResult, series: string, unit: string, pick: (s: Sample) => number): Trend {
  const points = result.samples
    .filter((s) => s.t >= result.warmupSeconds)
    .map((s) => [s.t, pick(s)] as [number, number])
    .filter(([, y]) => Number.isFinite(y));
  const ys = points.map(([, y]) => y);
  return {
    series,
    unit,
    first: ys[0] ?? Number.NaN,
    last: ys.at(-1) ?? Number.NaN,
    min: ys.length ? Math.min(...ys) : Number.NaN,
    max: ys.length ? Math.max(...ys) : Number.NaN,
    ...slopePer10Min(points),
  };
}

/**
 * The parts of a process's memory, after RSS and heap used (samples of an older results.json lack them: their
 * rows show dashes). Anonymous RSS ≈ heap total + external + native.
 */
const memorySeries = [
  ['RSS anonymous', 'rssAnonMb'],
  ['heap total', 'heapTotalMb'],
  ['new space', 'newSpaceMb'],
  ['old space', 'oldSpaceMb'],
  ['old space used', 'oldSpaceUsedMb'],
  ['code space', 'codeSpaceMb'],
  ['external', 'externalMb'],
  ['native (anon RSS − heap total − external)', 'nativeMb'],
] as const satisfies readonly (readonly [string, keyof ProcessSample])[];

/** Every trend the report shows. */
export function trends(result: SoakResult): Trend[] {
  const names = Object.keys(result.samples[0]?.processes ?? {});
  const tables = ['invocations', 'sessions', 'events', 'nodes', 'tool_requests'];
  return [
    ...names.map((p) => trend(result, `${p} RSS`, 'MB', (s) => s.processes[p]?.rssMb ?? Number.NaN)),
    ...names.map((p) =>
      trend(result, `${p} heap used`, 'MB', (s) => s.processes[p]?.heapUsedMb ?? Number.NaN),
    ),
    ...memorySeries.flatMap(([label, key]) =>
      names.map((p) => trend(result, `${p} ${label}`, 'MB', (s) => s.processes[p]?.[key] ?? Number.NaN)),
    ),
    ...names.map((p) =>
      trend(result, `${p} active handles`, '', (s) => s.processes[p]?.activeHandles ?? Number.NaN),
    ),
    ...names.map((p) =>
      trend(result, `${p} /metrics series`, '', (s) => s.processes[p]?.metricSeries ?? Number.NaN),
    ),
    ...names.map((p) =>
      trend(result, `${p} event-loop delay p99`, 'ms', (s) => s.processes[p]?.eventLoopP99Ms ?? Number.NaN),
    ),
    trend(result, 'step latency p50', 'ms', (s) => s.stepP50Ms),
    trend(result, 'step latency p99', 'ms', (s) => s.stepP99Ms),
    trend(result, 'run latency p99 (chores, polled every 1 s)', 'ms', (s) => s.runP99Ms),
    trend(result, 'runnable nodes', '', (s) => s.runnableNodes),
    ...tables.map((t) => trend(result, `${t} size`, 'MB', (s) => s.tables[t]?.mb ?? Number.NaN)),
    ...tables.map((t) => trend(result, `${t} rows`, '', (s) => s.tables[t]?.rows ?? Number.NaN)),
    ...tables.map((t) => trend(result, `${t} dead rows`, '', (s) => s.tables[t]?.deadRows ?? Number.NaN)),
    trend(result, 'Redis memory', 'MB', (s) => s.redisMb),
  ];
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '–');

/** The line charts (SVG), by file name. */
export async function renderCharts(result: SoakResult): Promise<Record<string, string>> {
  const { compile } = await import('vega-lite');
  const { parse, View } = await import('vega');
  const chart = async (title: string, axis: string, rows: { t: number; series: string; value: number }[]) => {
    const spec = {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title,
      width: 640,
      height: 220,
      data: { values: rows.filter((r) => Number.isFinite(r.value)) },
      mark: { type: 'line', point: false },
      encoding: {
        x: { field: 't', type: 'quantitative', title: 'minutes' },
        y: { field: 'value', type: 'quantitative', title: axis },
        color: { field: 'series', type: 'nominal', title: null },
      },
    } as const;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const view = new View(parse(compile(spec as any).spec), { renderer: 'none' });
    return view.toSVG();
  };
  const m = (s: Sample) => s.t / 60;
  const names = Object.keys(result.samples[0]?.processes ?? {});
  const tables = ['invocations', 'sessions', 'events', 'nodes', 'tool_requests'];
  return {
    'rss.svg': await chart(
      'RSS of each process',
      'MB',
      result.samples.flatMap((s) =>
        names.map((p) => ({ t: m(s), series: p, value: s.processes[p]?.rssMb ?? NaN })),
      ),
    ),
    'latency.svg': await chart(
      'Step latency (claim to commit, completed steps), per 10 s window',
      'ms',
      result.samples.flatMap((s) => [
        { t: m(s), series: 'p50', value: s.stepP50Ms },
        { t: m(s), series: 'p99', value: s.stepP99Ms },
      ]),
    ),
    'tables.svg': await chart(
      'Table size (heap, indexes, TOAST) under retention',
      'MB',
      result.samples.flatMap((s) =>
        tables.map((t) => ({ t: m(s), series: t, value: s.tables[t]?.mb ?? NaN })),
      ),
    ),
    'runs.svg': await chart(
      'Runs in each state (rows of invocations)',
      'runs',
      result.samples.flatMap((s) =>
        Object.entries(s.runs).map(([status, n]) => ({ t: m(s), series: status, value: n })),
      ),
    ),
    'redis.svg': await chart(
      'Redis memory',
      'MB',
      result.samples.map((s) => ({ t: m(s), series: 'used_memory', value: s.redisMb })),
    ),
  };
}

/** The processes' extra environment, as a sentence ('' when none). */
function envLine(env: Record<string, string> | undefined): string {
  const pairs = Object.entries(env ?? {}).filter(([k]) => k !== 'NODE_OPTIONS' || env?.[k]);
  return pairs.length === 0
    ? ''
    : ` The api and the workers ran with ${pairs.map(([k, v]) => `\`${k}=${v}\``).join(', ')}.`;
}

/**
 * The RSS slope of each process from several starts (every 10 minutes, while 20 minutes of samples remain after
 * it): where V8's warm-up (its spaces growing to their working size, code compiled and re-optimised) ends.
 */
function rssByStart(result: SoakResult): string[] {
  const names = Object.keys(result.samples[0]?.processes ?? {});
  const end = result.samples.at(-1)?.t ?? 0;
  const starts: number[] = [];
  for (let m = 0; (m + 20) * 60 <= end; m += 10) starts.push(m);
  if (names.length === 0 || starts.length < 2) return [];
  const lines = [
    'RSS slope per 10 minutes by where the trend starts (MB, ± the 95 % confidence interval):',
    '',
    `| from minute | ${names.join(' | ')} |`,
    `|--:|${names.map(() => '--:').join('|')}|`,
  ];
  for (const m of starts) {
    const cells = names.map((name) => {
      const points = result.samples
        .filter((x) => x.t >= m * 60)
        .map((x) => [x.t, x.processes[name]?.rssMb ?? Number.NaN] as [number, number]);
      const { slope, ci95 } = slopePer10Min(points);
      return `${fmt(slope, 2)} ± ${fmt(ci95, 2)}`;
    });
    lines.push(`| ${m} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  return lines;
}

/** SOAK.md. `charts` are the chart files' paths relative to the report. */
export function soakMarkdown(result: SoakResult, charts: string[]): string {
  const { end } = result;
  const lines: string[] = [];
  lines.push('# Soak', '');
  lines.push(
    `\`npm run soak -- --minutes ${result.minutes}\` on ${result.startedAt}: \`agentloom api\` and two \`agentloom worker\`` +
      ` processes on PostgreSQL and Redis, retention \`AGENTLOOM_RETENTION=${result.retention}\`, a steady mix of the` +
      ' example app (parallel research, a draft/critique loop, a confirmation answered 2–4 s later; one in five' +
      ' rejected), chores (a tool that throws, a model that throws, a slow tool cancelled while it runs) and writer' +
      ' runs cancelled while paused (every other one retried, then approved). Sampled every 10 s.',
    '',
    `Machine: ${result.machine}.${envLine(result.env)}${
      result.nodeFlags?.length
        ? ` Node ran them with ${result.nodeFlags.map((f) => `\`${f}\``).join(' ')}.`
        : ''
    } Warm-up excluded from the trends: the first ${Math.round(result.warmupSeconds / 60)} minutes.`,
    '',
  );
  lines.push('## End state', '');
  lines.push(
    `${end.started} runs started; ${end.wrong.length} ended otherwise than they should; ${end.stuck} never ended;` +
      ` ${result.driverErrors.length} API errors; ${Object.values(result.logErrors).flat().length} unprovoked` +
      " error lines in the processes' logs.",
    '',
  );
  lines.push('| kind | ended as |', '|---|---|');
  for (const [kind, finals] of Object.entries(end.byKind)) {
    lines.push(
      `| ${kind} | ${Object.entries(finals)
        .map(([f, n]) => `${f} ${n}`)
        .join(', ')} |`,
    );
  }
  lines.push('', '## Trends after the warm-up', '');
  const rss = trends(result).filter((t) => t.series.endsWith(' RSS'));
  const over = rss.filter((t) => !(t.slope < 1));
  lines.push(
    over.length === 0
      ? `RSS flat in every process: each slope is under 1 MB per 10 minutes (${rss.map((t) => `${t.series} ${fmt(t.slope, 2)}`).join(', ')}).`
      : `RSS slope of 1 MB per 10 minutes or more: ${over.map((t) => `${t.series} ${fmt(t.slope, 2)} ± ${fmt(t.ci95, 2)} MB`).join(', ')}` +
          ' (± is the 95 % confidence interval; an interval that reaches below 1 does not show growth beyond the bound).',
    '',
  );
  lines.push(...rssByStart(result));
  lines.push(
    'Reading the memory rows: RSS is the anonymous part plus mapped files (the node binary and libraries, ~47 MB,' +
      ' constant); the anonymous part is V8’s heap total (its new, old, code and large-object spaces, used or' +
      ' free), external memory (Buffers, ArrayBuffers) and the native rest (malloc: V8’s compiler and GC' +
      ' structures, libuv, thread stacks). A leak of JavaScript objects shows in heap used; V8 growing its spaces' +
      ' in heap total with heap used flat; a native leak or malloc fragmentation in the native rest.',
    '',
  );
  lines.push(
    '| series | first | last | min | max | slope per 10 min (95 % CI) |',
    '|---|--:|--:|--:|--:|--:|',
  );
  for (const t of trends(result)) {
    const u = t.unit ? ` ${t.unit}` : '';
    lines.push(
      `| ${t.series} | ${fmt(t.first)}${u} | ${fmt(t.last)}${u} | ${fmt(t.min)}${u} | ${fmt(t.max)}${u} | ${fmt(t.slope, 2)} ± ${fmt(t.ci95, 2)}${u} |`,
    );
  }
  if (charts.length > 0) {
    lines.push('', '## Charts', '');
    for (const chart of charts) lines.push(`![${chart}](${chart})`, '');
  }
  const errors = Object.entries(result.logErrors).filter(([, l]) => l.length > 0);
  if (errors.length > 0 || result.driverErrors.length > 0) {
    lines.push('## Errors', '');
    for (const e of result.driverErrors.slice(0, 20)) lines.push(`- driver: ${e}`);
    for (const [p, l] of errors) for (const e of l.slice(0, 10)) lines.push(`- ${p}: ${e}`);
    lines.push('');
  }
  return lines.join('\n');
}
