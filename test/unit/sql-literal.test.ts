/**
 * The batch's SQL literals (src/store/db/sql-literal.ts) are node-postgres's `escapeLiteral`, character for
 * character, on strings built to contain what needs escaping: quotes, backslashes, both, runs of them at either
 * end, JSON, and text outside ASCII.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { escapeLiteral } from '../../src/store/db/sql-literal.js';

/** A deterministic pseudo-random generator (mulberry32), so a failure names a reproducible string. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  "'",
  "''",
  '\\',
  '\\\\',
  "\\'",
  '"',
  'a',
  'é',
  '✓',
  '😀',
  ' ',
  '\n',
  'E',
  '{"k":"v\\"w"}',
  '$$',
];

describe('escapeLiteral', () => {
  it('answers what pg.escapeLiteral answers', () => {
    const fixed = ['', "'", '\\', "it's", 'C:\\temp', "a\\'b", '{"text":"it\'s \\"quoted\\""}', 'plain'];
    for (const text of fixed) expect(escapeLiteral(text), JSON.stringify(text)).toBe(pg.escapeLiteral(text));
    const next = random(33);
    for (let i = 0; i < 5000; i++) {
      const length = Math.floor(next() * 12);
      const text = Array.from({ length }, () => PIECES[Math.floor(next() * PIECES.length)]).join('');
      expect(escapeLiteral(text), JSON.stringify(text)).toBe(pg.escapeLiteral(text));
    }
  });

  it('round-trips through PostgreSQL’s rules: a quote doubled, a backslash kept only in the E form', () => {
    expect(escapeLiteral("it's")).toBe("'it''s'");
    expect(escapeLiteral('a\\b')).toBe(" E'a\\\\b'");
  });
});
