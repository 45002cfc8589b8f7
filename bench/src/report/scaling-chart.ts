/**
 * The scaling suite's chart (vega-lite → SVG): steps/s total and per process by worker processes, and the CPU
 * cores each process group used. Apart from scaling.ts so that the report's words load without vega.
 */
import { compile, type TopLevelSpec } from 'vega-lite';
import { parse, View } from 'vega';
import type { BenchReport } from './shape.js';
import { cores, scalingRows } from './scaling.js';
import { rangeOf } from './spread.js';

/** The scaling chart: steps/s total and per process by worker processes, CPU cores by process group. */
export async function renderScalingChart(report: BenchReport): Promise<string | undefined> {
  const rows = scalingRows(report);
  if (rows.length === 0) return undefined;
  const lines = rows.flatMap((r) => {
    const range = rangeOf(r.figure);
    return [
      { workers: r.workers, series: 'total', value: r.figure.median, low: range.low, high: range.high },
      {
        workers: r.workers,
        series: 'per process',
        value: r.figure.median / r.workers,
        low: range.low / r.workers,
        high: range.high / r.workers,
      },
    ];
  });
  const cpu = rows.flatMap((r) =>
    (['workers', 'postgres', 'bench', 'redis'] as const).map((k) => ({
      workers: String(r.workers),
      group: k === 'bench' ? 'bench process' : k === 'postgres' ? 'PostgreSQL' : k,
      cores: cores(r, k) ?? 0,
    })),
  );
  const x = {
    field: 'workers',
    type: 'quantitative',
    title: 'worker processes',
    scale: { type: 'log', base: 2 },
  };
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'W2 on PostgreSQL + BullMQ/Redis by worker processes',
      subtitle: `${report.machine.cores} cores, ${report.startedAt.slice(0, 10)}; median of ${report.scale.rounds} round(s), whisker: range`,
    },
    hconcat: [
      {
        title: 'steps per second',
        width: 300,
        data: { values: lines },
        layer: [
          {
            mark: { type: 'line', point: true },
            encoding: {
              x,
              y: { field: 'value', type: 'quantitative', title: 'steps/s' },
              color: { field: 'series', type: 'nominal', title: null },
            },
          },
          {
            mark: { type: 'rule' },
            encoding: {
              x,
              y: { field: 'low', type: 'quantitative' },
              y2: { field: 'high' },
              color: { field: 'series', type: 'nominal' },
            },
          },
        ],
      },
      {
        title: 'CPU cores used (at the median steps/s)',
        width: 240,
        data: { values: cpu },
        mark: 'bar',
        encoding: {
          x: { field: 'workers', type: 'ordinal', title: 'worker processes' },
          y: { field: 'cores', type: 'quantitative', title: 'cores', stack: 'zero' },
          color: { field: 'group', type: 'nominal', title: null },
        },
      },
    ],
    resolve: { scale: { color: 'independent' } },
    config: { font: 'sans-serif', view: { stroke: null } },
  } as unknown as TopLevelSpec;
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  return view.toSVG();
}
