/** Bench figures for the report's unit tests: a figure over rounds with these round medians. */
import type { Figure } from '../../bench/src/measure.js';

/** A figure whose rounds had these medians (rounds 1..n unless `roundNumbers` says otherwise). */
export function roundsFigure(rounds: number[], roundNumbers?: number[], unit = 'ms/step'): Figure {
  const sorted = [...rounds].sort((a, b) => a - b);
  return {
    median: sorted[Math.floor(sorted.length / 2)] as number,
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
    samples: rounds,
    rounds,
    ...(roundNumbers ? { roundNumbers } : {}),
    unit,
  };
}
