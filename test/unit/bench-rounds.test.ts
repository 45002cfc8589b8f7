/**
 * The bench's rounds (pure logic of bench/src/rounds.ts and bench/src/report/spread.ts): a warm-up round runs
 * first and counts for nothing; a ratio of two systems is paired by round, so a round that was slow for every
 * system does not widen the ratio's range, and rounds are matched by number, not by position, when one failed.
 */
import { describe, expect, it } from 'vitest';
import type { Figure, SuiteResult } from '../../bench/src/measure.js';
import { plusFigure, ratioOf, verdictOf } from '../../bench/src/report/spread.js';
import { mergeRounds, planRuns } from '../../bench/src/rounds.js';
import { roundsFigure } from '../fixtures/bench-figures.js';

/** One round's result of a suite with one W1 figure (a single sample). */
function roundResult(round: number, w1: number, extra?: Record<string, unknown>): SuiteResult {
  return {
    suite: 'agentloom-pg-redis-1',
    label: 'agentloom',
    kind: 'agentloom',
    round,
    figures: { w1: { median: w1, min: w1, max: w1, samples: [w1], unit: 'ms/step' } },
    ...(extra ? { extra } : {}),
    errors: [],
    seconds: 1,
  } as SuiteResult;
}

describe('ratios paired by round', () => {
  it('takes a round that was slow for both systems out of the ratio', () => {
    // Round 1 was 25% slower for both; in each round the first system took 0.8× the second.
    const mine = roundsFigure([1.2, 0.96, 0.976]);
    const theirs = roundsFigure([1.5, 1.2, 1.22]);
    const r = ratioOf(mine, theirs);
    expect(r.value).toBeCloseTo(0.8, 3);
    expect(r.low).toBeCloseTo(0.8, 3);
    expect(r.high).toBeCloseTo(0.8, 3);
    expect(verdictOf(r, (x) => x <= 0.81)).toBe('met');
    // Unpaired, the same rounds allow 0.64–1.0: a bound of 0.81 could not be concluded.
    expect(verdictOf({ value: 0.8, low: 0.96 / 1.5, high: 1.2 / 1.2 }, (x) => x <= 0.81)).toBe(
      'inconclusive',
    );
  });

  it('keeps a swing of one system in its round', () => {
    const r = ratioOf(roundsFigure([1.0, 1.0, 1.0]), roundsFigure([1.0, 2.0, 1.0]));
    expect(r).toEqual({ value: 1, low: 0.5, high: 1 });
    expect(verdictOf(r, (x) => x <= 0.8)).toBe('inconclusive');
  });

  it('pairs rounds by their number when one system lost a round', () => {
    // The second system's round 2 failed: its figures are of rounds 1 and 3.
    const mine = roundsFigure([1, 5, 2], [1, 2, 3]);
    const theirs = roundsFigure([2, 4], [1, 3]);
    const r = ratioOf(mine, theirs);
    expect(r.low).toBeCloseTo(0.5, 6);
    expect(r.high).toBeCloseTo(0.5, 6);
  });

  it('falls back to every ratio the two ranges allow with fewer than two rounds in common', () => {
    const single = (median: number, min: number, max: number): Figure => ({
      median,
      min,
      max,
      samples: [min, median, max],
      unit: 'ms/step',
    });
    const r = ratioOf(single(1, 0.9, 1.2), single(2, 1.8, 2.4));
    expect(r.value).toBeCloseTo(0.5, 6);
    expect(r.low).toBeCloseTo(0.9 / 2.4, 6);
    expect(r.high).toBeCloseTo(1.2 / 1.8, 6);
  });

  it('adds a share of another figure round by round', () => {
    const sum = plusFigure(roundsFigure([1, 2, 3]), roundsFigure([20, 40, 60]), 1 / 20);
    expect(sum.rounds).toEqual([2, 4, 6]);
    expect(sum.median).toBe(4);
    expect(ratioOf(sum, roundsFigure([4, 8, 12])).value).toBeCloseTo(0.5, 6);
  });
});

describe('warm-up rounds', () => {
  it('run every round suite first, numbered 0, and the once-only suites once after the rounds', () => {
    const plan = planRuns(['dbos', 'agentloom-pg-local', 'w4'], 2, 1);
    expect(plan).toEqual([
      { name: 'dbos', round: 0 },
      { name: 'agentloom-pg-local', round: 0 },
      { name: 'dbos', round: 1 },
      { name: 'agentloom-pg-local', round: 1 },
      { name: 'dbos', round: 2 },
      { name: 'agentloom-pg-local', round: 2 },
      { name: 'w4', round: 1 },
    ]);
    expect(planRuns(['w4'], 3, 1)).toEqual([{ name: 'w4', round: 1 }]);
  });

  it('count in no figure and no extra, and stay in the round results marked warm-up', () => {
    const merged = mergeRounds([
      roundResult(0, 9, { profile: 'warm-up' }),
      roundResult(1, 1, { profile: 'round 1' }),
      roundResult(2, 3),
      roundResult(3, 2),
    ]);
    expect(merged.figures.w1?.rounds).toEqual([1, 3, 2]);
    expect(merged.figures.w1?.roundNumbers).toEqual([1, 2, 3]);
    expect(merged.figures.w1?.median).toBe(2);
    expect(merged.figures.w1?.max).toBe(3);
    expect(merged.figures.w1?.samples).not.toContain(9);
    expect(merged.extra).toEqual({ profile: 'round 1' });
    expect(merged.roundResults?.map((r) => [r.round, r.warmup ?? false])).toEqual([
      [0, true],
      [1, false],
      [2, false],
      [3, false],
    ]);
  });
});
