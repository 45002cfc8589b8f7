/**
 * Spread of a figure across rounds, and the rule that says when a goal's verdict cannot be concluded
 * (bench/README.md "Rounds, spread and verdicts"):
 *
 * - a figure's **range** is the lowest to the highest of its rounds' medians (with one round: the lowest to the
 *   highest of that round's runs); its **relative spread** is (high − low) / median;
 * - a ratio X ÷ Y of two systems measured in the same rounds is **paired by round**: each round gives X's figure ÷
 *   Y's figure of that round (the two ran minutes apart, on the same server state), the ratio is the median of
 *   those and its range their lowest to highest. A swing of the whole machine during one round moves both sides
 *   of that round's ratio and not the ratio; a swing of one system moves its round's ratio only. With fewer than
 *   two rounds in common it falls back to the ratio of the medians with [low X ÷ high Y, high X ÷ low Y], every
 *   ratio the two ranges allow;
 * - a goal (a bound on a figure or on a ratio) is **met** or **not met** when the verdict is the same at both
 *   ends of the range (then it is also the verdict of the medians); otherwise it is **inconclusive: the spread
 *   is too wide to conclude** — one round more or less could flip it. Counts (statements, transactions per
 *   step) have no spread: their verdict is always conclusive.
 */
import type { Figure } from '../measure.js';

/** A value with the range it may take. */
export interface Ranged {
  value: number;
  low: number;
  high: number;
}

export type Verdict = 'met' | 'not met' | 'inconclusive' | 'not measured';

/** The range of a figure (see the module's rule). */
export function rangeOf(f: Figure): Ranged {
  if (f.rounds && f.rounds.length > 1)
    return { value: f.median, low: Math.min(...f.rounds), high: Math.max(...f.rounds) };
  if (f.samples.length > 0)
    return { value: f.median, low: Math.min(...f.samples), high: Math.max(...f.samples) };
  return { value: f.median, low: f.min, high: f.max };
}

/** Relative spread of a figure: (high − low) / median. */
export function relativeSpread(f: Figure): number {
  const r = rangeOf(f);
  return r.value === 0 ? 0 : (r.high - r.low) / r.value;
}

/** Each round's figure by its round number (older results without `roundNumbers`: rounds 1, 2, …). */
function byRound(f: Figure): Map<number, number> {
  const rounds = f.rounds ?? [];
  return new Map(rounds.map((value, index) => [f.roundNumbers?.[index] ?? index + 1, value]));
}

/** The median of a non-empty list. */
function median(values: number[]): number {
  const s = [...values].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The ratio of each round both figures were measured in, in round order (see the module's rule). */
export function pairedRatios(a: Figure, b: Figure): number[] {
  const ofB = byRound(b);
  const ratios: number[] = [];
  for (const [round, x] of byRound(a)) {
    const y = ofB.get(round);
    if (y !== undefined && y !== 0) ratios.push(x / y);
  }
  return ratios;
}

/**
 * `a + share × b` round by round (rounds both have; without rounds in common: on medians), e.g. a step's cost plus a
 * share of a per-run cost, as a figure a ratio can be taken of.
 */
export function plusFigure(a: Figure, b: Figure, share: number): Figure {
  const ofB = byRound(b);
  const rounds: number[] = [];
  const roundNumbers: number[] = [];
  for (const [round, x] of byRound(a)) {
    const y = ofB.get(round);
    if (y === undefined) continue;
    rounds.push(x + share * y);
    roundNumbers.push(round);
  }
  const value = rounds.length > 0 ? median(rounds) : a.median + share * b.median;
  return {
    median: value,
    min: rounds.length > 0 ? Math.min(...rounds) : value,
    max: rounds.length > 0 ? Math.max(...rounds) : value,
    samples: [],
    ...(rounds.length > 0 ? { rounds, roundNumbers } : {}),
    unit: a.unit,
  };
}

/** `a` with `ms` added to each of its rounds (and to its median and ends): a fixed cost measured once, added per round. */
export function shiftFigure(a: Figure, ms: number): Figure {
  return {
    ...a,
    median: a.median + ms,
    min: a.min + ms,
    max: a.max + ms,
    samples: [],
    ...(a.rounds ? { rounds: a.rounds.map((r) => r + ms) } : {}),
  };
}

/** `a ÷ b`, paired by round when both have two rounds or more in common (see the module's rule). */
export function ratioOf(a: Figure, b: Figure): Ranged {
  const paired = pairedRatios(a, b);
  if (paired.length >= 2)
    return { value: median(paired), low: Math.min(...paired), high: Math.max(...paired) };
  const ra = rangeOf(a);
  const rb = rangeOf(b);
  return { value: ra.value / rb.value, low: ra.low / rb.high, high: ra.high / rb.low };
}

/** A ranged value of something counted (no spread). */
export function exact(value: number): Ranged {
  return { value, low: value, high: value };
}

/** The verdict of `ok` on a ranged value: the same at both ends, or inconclusive. */
export function verdictOf(v: Ranged | undefined, ok: (x: number) => boolean): Verdict {
  if (!v || !Number.isFinite(v.value)) return 'not measured';
  const low = ok(v.low);
  const high = ok(v.high);
  if (low !== high) return 'inconclusive';
  return low ? 'met' : 'not met';
}

/** ", range a–b" when the value has a spread. */
export function rangeText(v: Ranged): string {
  if (v.low === v.high) return '';
  const digits = Math.abs(v.value) >= 100 ? 0 : 2;
  return `; range ${v.low.toFixed(digits)}–${v.high.toFixed(digits)}`;
}
