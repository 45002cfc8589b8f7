/**
 * The chart of W1–W3 (median bar, range whisker per system (spread.ts), the performance budget's absolute W3 target as a rule), written
 * as a vega-lite spec, compiled to vega and rendered headless to SVG.
 */
import { compile, type TopLevelSpec } from 'vega-lite';
import { parse, View } from 'vega';
import { figure, type BenchReport, type Workload } from './shape.js';
import { rangeOf } from './spread.js';

/** Short names for the chart's axis. */
const NAMES: Record<string, string> = {
  'floor-commit': 'floor: one durable commit',
  'floor-bullmq': 'raw BullMQ chain',
  'floor-bullmq-upsert': 'floor: BullMQ + upsert',
  dbos: 'DBOS Transact',
  langgraph: 'LangGraph + PostgresSaver',
  'agentloom-pglite': 'agentloom · PGlite',
  'agentloom-pg-local': 'agentloom · PG + in-process queue',
  'agentloom-pg-redis-1': 'agentloom · PG + Redis, 1 worker',
  'agentloom-pg-redis-2': 'agentloom · PG + Redis, 2 workers',
  'agentloom-pg-pgqueue-1': 'agentloom · PG-only queue, 1 worker',
};

/** The performance budget's targets that can be drawn on a panel, from this run's figures. */
function targetRules(report: BenchReport, workload: Workload): { value: number; label: string }[] {
  const floor = figure(report, 'floor-bullmq-upsert', 'w1')?.median;
  const dbosW1 = figure(report, 'dbos', 'w1')?.median;
  const dbosW2 = figure(report, 'dbos', 'w2')?.median;
  const rules: { value: number; label: string }[] = [];
  if (workload === 'w1' && floor !== undefined)
    rules.push({ value: 1.4 * floor, label: 'target: 1.4× floor' });
  if (workload === 'w1' && dbosW1 !== undefined)
    rules.push({ value: 0.6 * dbosW1, label: 'target: 0.6× DBOS' });
  if (workload === 'w2' && dbosW2 !== undefined) rules.push({ value: 2 * dbosW2, label: 'target: 2× DBOS' });
  if (workload === 'w3') rules.push({ value: 230, label: 'target: 230 ms' });
  return rules;
}

interface Row {
  system: string;
  kind: string;
  order: number;
  median: number;
  min: number;
  max: number;
  text: string;
}

const PANELS: { workload: Workload; title: string; axis: string; digits: number }[] = [
  {
    workload: 'w1',
    title: 'W1 — sequential: one invocation of 20 leaves (lower is better)',
    axis: 'ms per step',
    digits: 2,
  },
  {
    workload: 'w2',
    title: 'W2 — 200 concurrent invocations of 5 leaves (higher is better)',
    axis: 'steps per second',
    digits: 0,
  },
  {
    workload: 'w3',
    title: 'W3 — 50 parallel 200 ms leaves + join (lower is better)',
    axis: 'wall ms',
    digits: 0,
  },
];

function rows(report: BenchReport, workload: Workload, digits: number): Row[] {
  return report.suites.flatMap((s, order) => {
    const f = s.figures[workload];
    if (!f) return [];
    return [
      {
        system: NAMES[s.suite] ?? s.label,
        kind: s.kind,
        order,
        median: f.median,
        min: rangeOf(f).low,
        max: rangeOf(f).high,
        text: f.median.toFixed(digits),
      },
    ];
  });
}

function panel(report: BenchReport, p: (typeof PANELS)[number]): Record<string, unknown> {
  const values = rows(report, p.workload, p.digits);
  const y = {
    field: 'system',
    type: 'nominal',
    sort: { field: 'order', op: 'min' },
    title: null,
    axis: { labelLimit: 300 },
  };
  const layers: Record<string, unknown>[] = [
    {
      mark: { type: 'bar', height: 14 },
      encoding: {
        y,
        x: { field: 'median', type: 'quantitative', title: `${p.axis} (median; whisker: range)` },
        color: {
          field: 'kind',
          type: 'nominal',
          title: null,
          scale: { domain: ['agentloom', 'peer', 'floor'], range: ['#4c78a8', '#f58518', '#9d9d9d'] },
        },
      },
    },
    {
      mark: { type: 'rule', color: '#333' },
      encoding: { y, x: { field: 'min', type: 'quantitative' }, x2: { field: 'max' } },
    },
    {
      mark: { type: 'text', align: 'left', dx: 4, fontSize: 10 },
      encoding: { y, x: { field: 'max', type: 'quantitative' }, text: { field: 'text' } },
    },
  ];
  const rules = targetRules(report, p.workload);
  if (rules.length > 0) {
    layers.push({
      data: { values: rules },
      mark: { type: 'rule', color: '#d62728', strokeDash: [4, 3] },
      encoding: { x: { field: 'value', type: 'quantitative' } },
    });
    // Labels one under the other (pixel offsets, no scale), so rules close together stay readable.
    const labels = rules.map((r, i) => ({ ...r, py: 2 + 11 * i }));
    layers.push({
      data: { values: labels },
      mark: {
        type: 'text',
        color: '#d62728',
        angle: 0,
        align: 'left',
        baseline: 'top',
        dx: 3,
        fontSize: 9,
      },
      encoding: {
        x: { field: 'value', type: 'quantitative' },
        y: { field: 'py', type: 'quantitative', scale: null },
        text: { field: 'label' },
      },
    });
  }
  return { title: p.title, data: { values }, width: 520, layer: layers };
}

/** Renders the chart of `report` to an SVG document. */
export async function renderChart(report: BenchReport): Promise<string> {
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `agentloom vs DBOS Transact, LangGraph JS and the floors (one run, ${report.scale.rounds ?? 1} interleaved round(s))`,
      subtitle: `${report.machine.cores} cores, ${report.machine.memoryGiB} GiB, Node ${report.machine.node}, PostgreSQL ${report.machine.postgres} (fsync on), ${report.startedAt.slice(0, 10)}; bar: median of the rounds, whisker: their range`,
    },
    vconcat: PANELS.map((p) => panel(report, p)),
    resolve: { scale: { color: 'shared' } },
    config: { font: 'sans-serif', view: { stroke: null } },
  } as unknown as TopLevelSpec;
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  return view.toSVG();
}
