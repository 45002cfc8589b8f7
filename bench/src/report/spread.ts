/**
 * Spread of a figure across rounds, and the rule that says when a goal's verdict cannot be concluded
 * (bench/README.md "Rounds, spread and verdicts"):
 *
 * - a figure's **range** is the lowest to the highest of its rounds' medians (with one round: the lowest to the
 *   highest of that round's runs); its **relative spread** is (high − low) / median;
 * - a ratio X ÷ Y is computed on medians; its range is [low X ÷ high Y, high X ÷ low Y], every ratio the
 *   two ranges allow;
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

/** `a ÷ b` on medians, with every ratio the two ranges allow. */
export function ratioOf(a: Figure, b: Figure): Ranged {
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
