/**
 * Writing a PGlite data-directory tarball into a directory: files and directories land where the tar says,
 * PG_VERSION (what makes the directory a database) only once everything else is written, nothing outside the
 * directory, and never over a database already there.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { extractDataDir } from '../../src/store/db/pgdata-tar.js';
import { tarEntry, tarOf } from '../fixtures/tar-entry.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-pgdata-'));
  dirs.push(dir);
  return dir;
}

describe('extractDataDir', () => {
  it('writes the files and directories of the tar, PG_VERSION included', () => {
    const dir = tempDir();
    const tar = tarOf(
      tarEntry('/PG_VERSION', '17\n'),
      tarEntry('/base', '', '5'),
      tarEntry('/base/5/1259', 'x'.repeat(700)),
      tarEntry('/postgresql.conf', 'a = 1\n'),
    );
    extractDataDir(tar, dir);
    expect(readFileSync(join(dir, 'PG_VERSION'), 'utf8')).toBe('17\n');
    expect(readFileSync(join(dir, 'base', '5', '1259'), 'utf8')).toBe('x'.repeat(700));
    expect(readFileSync(join(dir, 'postgresql.conf'), 'utf8')).toBe('a = 1\n');
  });

  it('writes PG_VERSION last: an entry that fails leaves a directory that is not a database', () => {
    const dir = tempDir();
    const tar = tarOf(tarEntry('/PG_VERSION', '17\n'), tarEntry('/base/1', 'x'), tarEntry('/../escape', 'x'));
    expect(() => extractDataDir(tar, dir)).toThrow(/outside the directory/);
    expect(existsSync(join(dir, 'base', '1'))).toBe(true);
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(false);
    expect(existsSync(join(dir, '..', 'escape'))).toBe(false);
  });

  it('refuses a tar without PG_VERSION, and a directory that already holds a database', () => {
    expect(() => extractDataDir(tarOf(tarEntry('/base/1', 'x')), tempDir())).toThrow(/no PG_VERSION/);
    const dir = tempDir();
    writeFileSync(join(dir, 'PG_VERSION'), '16\n');
    writeFileSync(join(dir, 'postgresql.conf'), 'mine\n');
    const tar = tarOf(tarEntry('/PG_VERSION', '17\n'), tarEntry('/postgresql.conf', 'theirs\n'));
    expect(() => extractDataDir(tar, dir)).toThrow(/already holds a database/);
    expect(readFileSync(join(dir, 'postgresql.conf'), 'utf8')).toBe('mine\n');
    expect(readFileSync(join(dir, 'PG_VERSION'), 'utf8')).toBe('16\n');
  });
});
