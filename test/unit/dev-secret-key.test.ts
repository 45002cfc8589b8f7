/**
 * The key `agentloom dev` seals users' credentials with when AGENTLOOM_SECRET_KEY is unset: made once in its data
 * directory (32 random bytes, base64, mode 0600, its place logged once), read back on every later start, never
 * replaced; a file that holds no key stops it with a CONFIG error naming the file.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { devSecretKey } from '../../src/cli/dev/dev-secret-key.js';
import { parseSecretKey } from '../../src/core/secret-box.js';

const root = mkdtempSync(join(tmpdir(), 'agentloom-dev-key-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function logger(): { log: Logger; lines: () => Record<string, unknown>[] } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const lines = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('devSecretKey', () => {
  it('makes a key in a new data directory (mode 0600) and says once where it is; later starts read it', () => {
    const dataDir = join(root, 'fresh', 'data');
    const first = logger();
    const key = devSecretKey(dataDir, first.log);
    const file = join(dataDir, 'secret.key');
    expect(parseSecretKey(key)).toHaveLength(32);
    expect(readFileSync(file, 'utf8').trim()).toBe(key);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.lines()).toEqual([
      expect.objectContaining({ level: 40, path: file, msg: expect.stringContaining('secret key') }),
    ]);
    // The key itself is never logged.
    expect(JSON.stringify(first.lines())).not.toContain(key);

    const second = logger();
    expect(devSecretKey(dataDir, second.log)).toBe(key);
    expect(second.lines()).toEqual([]);
    // Another data directory, another key.
    expect(devSecretKey(join(root, 'other'), logger().log)).not.toBe(key);
  });

  it('uses a key the file already holds (hex too), warning when others may read it', () => {
    const dataDir = join(root, 'given');
    devSecretKey(dataDir, logger().log);
    const hex = 'ab'.repeat(32);
    writeFileSync(join(dataDir, 'secret.key'), `${hex}\n`);
    chmodSync(join(dataDir, 'secret.key'), 0o644);
    const { log, lines } = logger();
    expect(devSecretKey(dataDir, log)).toBe(hex);
    expect(lines()).toEqual([
      expect.objectContaining({ level: 40, msg: expect.stringContaining('chmod 600') }),
    ]);
  });

  it('refuses a file that holds no key, naming it and saying how to make one', () => {
    const dataDir = join(root, 'bad');
    devSecretKey(dataDir, logger().log);
    writeFileSync(join(dataDir, 'secret.key'), 'not a key\n');
    expect(() => devSecretKey(dataDir, logger().log)).toThrow(
      expect.objectContaining({
        code: 'CONFIG',
        message: `${join(dataDir, 'secret.key')} must be 32 random bytes as base64 or hex; make one with \`openssl rand -base64 32\``,
      }),
    );
    // Not replaced: credentials sealed under the old key would not open.
    expect(readFileSync(join(dataDir, 'secret.key'), 'utf8')).toBe('not a key\n');
  });
});
