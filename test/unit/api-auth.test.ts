/**
 * API keys: the `AGENTLOOM_API_KEYS` format (CONTRACT.md), errors that never echo a key, and authentication that
 * compares the presented key with every configured key in constant time (crypto.timingSafeEqual on SHA-256
 * digests, so lengths never differ and no key is skipped).
 */
import type * as crypto from 'node:crypto';
import { timingSafeEqual } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { authenticate, canSee, parseApiKeys } from '../../src/api/http/auth.js';

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof crypto>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const compare = vi.mocked(timingSafeEqual);

describe('parseApiKeys', () => {
  it('reads name:key[:apps] entries separated by ; or whitespace', () => {
    const keys = parseApiKeys(' ops:k-ops ;writer:k-w:writer,blog\n\treader:k-r:blog ;; ');
    expect(keys.map((k) => [k.name, k.apps && [...k.apps]])).toEqual([
      ['ops', undefined],
      ['writer', ['writer', 'blog']],
      ['reader', ['blog']],
    ]);
    expect(keys.every((k) => k.digest.length === 32)).toBe(true);
    expect(parseApiKeys('')).toEqual([]);
  });

  it('refuses malformed entries, naming the entry but never echoing a key', () => {
    const bad: [string, RegExp][] = [
      ['ops', /entry 1: key of "ops" is empty/],
      ['ops:', /entry 1: key of "ops" is empty/],
      ['ops:s3cret-a:', /entry 1: apps of "ops"/],
      ['ops:s3cret-a:a b', /entry 2: /],
      ['ops:s3cret-a:x:y', /entry 1: write name:key/],
      ['a:s3cret-a b:s3cret-b a:s3cret-c', /entry 3: the name "a" is used twice/],
      ['a:s3cret-a b:s3cret-a', /entry 2: "b" has the same key as another entry/],
      ['b@d!:s3cret-a', /entry 1: the name must be/],
    ];
    for (const [spec, message] of bad) {
      let error: unknown;
      try {
        parseApiKeys(spec);
      } catch (err) {
        error = err;
      }
      expect(error, spec).toMatchObject({ code: 'CONFIG', details: { field: 'AGENTLOOM_API_KEYS' } });
      expect((error as Error).message, spec).toMatch(message);
      expect((error as Error).message, spec).not.toContain('s3cret');
    }
  });
});

describe('authenticate', () => {
  const keys = parseApiKeys('ops:key-of-ops writer:key-of-writer:writer reader:k:blog');

  beforeEach(() => {
    compare.mockClear();
  });

  it('finds the key and compares with every configured key, in constant time, whatever matches', () => {
    expect(authenticate(keys, 'Bearer key-of-ops')).toMatchObject({ name: 'ops', apps: undefined });
    expect(compare).toHaveBeenCalledTimes(keys.length);
    compare.mockClear();
    expect(authenticate(keys, 'bearer  key-of-writer ')?.name).toBe('writer');
    expect(compare).toHaveBeenCalledTimes(keys.length);
    for (const [a, b] of compare.mock.calls) expect((a as Buffer).length).toBe((b as Buffer).length);
  });

  it('refuses a wrong, partial, missing or differently sent key after the same comparisons', () => {
    const presented = [
      'Bearer key-of-op',
      'Bearer key-of-opsX',
      'Bearer ',
      'Basic a2V5LW9mLW9wcw==',
      'key-of-ops',
      undefined,
      'Bearer key-of-ops extra',
    ];
    for (const header of presented) {
      compare.mockClear();
      expect(authenticate(keys, header), String(header)).toBeUndefined();
      expect(compare, String(header)).toHaveBeenCalledTimes(keys.length);
    }
  });

  it('lets a key see only its apps, and everything without keys', () => {
    const writer = authenticate(keys, 'Bearer key-of-writer');
    expect(canSee(writer, 'writer')).toBe(true);
    expect(canSee(writer, 'blog')).toBe(false);
    expect(canSee(authenticate(keys, 'Bearer key-of-ops'), 'blog')).toBe(true);
    expect(canSee(undefined, 'anything')).toBe(true);
  });
});
