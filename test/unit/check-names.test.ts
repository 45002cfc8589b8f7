/**
 * The lint rule against names made of issue numbers (scripts/check-names.ts): the names the bench's report had
 * (`why33.ts`, `goals33`, `reasons33`, `issue33Goals`) and the results folders' `issue-17` are refused; versions,
 * algorithms, sizes and protocol names with digits (`v03`, `a2a`, `sha256`, `base64`, `utf8`, `http2`, `es2022`,
 * `node24`) are not. Exported names are read from declarations and `export { … }` lists alike.
 */
import { describe, expect, it } from 'vitest';
import { exportedNames, issueNumberIn } from '../../scripts/check-names.js';

describe('issueNumberIn', () => {
  it.each([
    'why33',
    'goals33',
    'sections33',
    'reasons33',
    'bench-why33.test',
    'issue33Goals',
    'issue-17-medians',
    'Issue_35',
    'REASONS33',
    'retry_after_cancel123',
  ])('refuses %s', (name) => {
    expect(issueNumberIn(name)).toBeDefined();
  });

  it.each([
    'a2a-dev-v03.test',
    'a2a-sdk-v03-server',
    'sha256',
    'base64url',
    'utf8',
    'http2',
    'es2022',
    'node24',
    'oauth2-callback',
    'agentloom-pg-redis-1',
    'int32',
    'Float64Array',
    'p99',
    'x509',
    'slopePer10Min',
    'rfc6749',
    'issuer',
    'reasons-w1',
  ])('accepts %s', (name) => {
    expect(issueNumberIn(name)).toBeUndefined();
  });
});

describe('exportedNames', () => {
  it('reads declarations, variable patterns and export lists, not local names', () => {
    const text = [
      'export function why33() {}',
      'export const { a, b: goals33 } = {} as never;',
      'export interface Shape {}',
      'export type Kind = string;',
      'export class Runner {}',
      'const reasons33 = 1;',
      'const local = 2;',
      'export { reasons33 as goalReasons, local };',
      'function notExported33() {}',
    ].join('\n');
    expect(exportedNames('x.ts', text)).toEqual([
      'why33',
      'a',
      'goals33',
      'Shape',
      'Kind',
      'Runner',
      'goalReasons',
      'local',
    ]);
  });
});
