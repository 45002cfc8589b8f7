/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests of `/metrics` endpoints: it
 * throws (or fails the test's expectations) on anything a Prometheus server would reject or misread.
 */
import { expect } from 'vitest';

/** One sample line: its name (with `_bucket` / `_sum` / `_count`), labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric family: its TYPE, HELP and samples. */
export interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)/;

/** A sample value as Go's ParseFloat reads it (what Prometheus uses): NaN and Inf in any case. */
function parseValue(text: string): number {
  if (/^\+?inf(inity)?$/i.test(text)) return Infinity;
  if (/^-inf(inity)?$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad sample value ${text}`);
  return Number(text);
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest.trim() !== '') {
    const m = LABEL.exec(rest);
    if (!m) throw new Error(`bad labels {${text}}`);
    const [whole, name, raw] = m as unknown as [string, string, string];
    if (name in labels) throw new Error(`label ${name} twice in {${text}}`);
    labels[name] = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
  }
  return labels;
}

/**
 * Parses the Prometheus text exposition format (version 0.0.4) strictly: HELP/TYPE lines, metric and label names,
 * escaped label values, float values; every sample belongs to a family declared by TYPE before it, families are
 * contiguous, no series repeats; histogram buckets are cumulative and end with le="+Inf" equal to _count.
 */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const series = new Set<string>();
  let current: string | undefined;
  const closed = new Set<string>();
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad metric name ${name}`);
      if (closed.has(name)) throw new Error(`family ${name} is not contiguous`);
      if (current && current !== name) closed.add(current);
      current = name;
      const family = families.get(name) ?? { type: 'untyped', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest))
          throw new Error(`bad type ${rest}`);
        if (family.samples.length > 0) throw new Error(`TYPE of ${name} after its samples`);
        family.type = rest;
      } else family.help = rest;
      families.set(name, family);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line ${line}`);
    const [, name, labelText, value] = m as unknown as [string, string, string | undefined, string];
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((f) => families.has(f));
    if (!family || family !== current) throw new Error(`sample ${name} outside its family (${current})`);
    const labels = parseLabels(labelText ?? '');
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`series ${key} twice`);
    series.add(key);
    families.get(family)?.samples.push({ name, labels, value: parseValue(value) });
  }
  for (const [name, family] of families) {
    if (family.type !== 'histogram') continue;
    const groups = new Map<string, Sample[]>();
    for (const s of family.samples.filter((s) => s.name === `${name}_bucket`)) {
      const { le, ...rest } = s.labels;
      expect(le, `${name} bucket without le`).toBeDefined();
      const key = JSON.stringify(Object.entries(rest).sort());
      groups.set(key, [...(groups.get(key) ?? []), s]);
    }
    for (const [key, buckets] of groups) {
      const values = buckets.map((b) => b.value);
      expect(values, `${name} ${key} buckets are cumulative`).toEqual([...values].sort((a, b) => a - b));
      expect(buckets.at(-1)?.labels.le).toBe('+Inf');
      const count = family.samples.find(
        (s) => s.name === `${name}_count` && JSON.stringify(Object.entries(s.labels).sort()) === key,
      );
      expect(count?.value, `${name} ${key} _count`).toBe(buckets.at(-1)?.value);
    }
  }
  return families;
}

/** The value of the first sample of `name` carrying `labels` (0 when there is none). */
export function value(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const family = families.get(name.replace(/_(bucket|sum|count)$/, '')) ?? families.get(name);
  const sample = family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return sample?.value ?? 0;
}
