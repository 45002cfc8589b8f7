/**
 * Writing a tarball of a PGlite data directory (ustar, as PGlite's `dumpDataDir` makes it) into a directory with
 * Node's fs: several times faster than PGlite's own `loadDataDir`, which writes each file through its WebAssembly file
 * system. PG_VERSION — what makes a directory a database to PGlite — is written last: a process killed mid-way leaves
 * a directory without it, which the next start takes for a new one and writes again (every file is rewritten whole).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const BLOCK = 512;
const VERSION_FILE = 'PG_VERSION';

/** Writes the data directory held in `tar` into `dir`; throws on an entry it does not understand. */
export function extractDataDir(tar: Uint8Array, dir: string): void {
  // Never over a database (the caller found none; another process may have made one since).
  if (existsSync(join(dir, VERSION_FILE))) throw new Error(`${dir} already holds a database`);
  const bytes = Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength);
  const text = (at: number, length: number): string => {
    const field = bytes.toString('latin1', at, at + length);
    const end = field.indexOf('\0');
    return end < 0 ? field : field.slice(0, end);
  };
  let version: Buffer | undefined;
  for (let at = 0; at + BLOCK <= bytes.length;) {
    const name = text(at, 100);
    if (name === '') break; // the end-of-archive blocks
    const size = parseInt(text(at + 124, 12).trim() || '0', 8);
    const type = text(at + 156, 1);
    const prefix = text(at + 345, 155);
    const path = safePath(dir, prefix === '' ? name : `${prefix}/${name}`);
    const data = bytes.subarray(at + BLOCK, at + BLOCK + size);
    if (!Number.isFinite(size) || data.length !== size) throw new Error(`tar entry ${name} is cut short`);
    if (type === '5') {
      mkdirSync(path, { recursive: true });
    } else if (type === '0' || type === '') {
      if (path === join(dir, VERSION_FILE)) {
        version = data;
      } else {
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, data);
      }
    } else {
      throw new Error(`tar entry ${name} has type ${JSON.stringify(type)}, not a file or a directory`);
    }
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  if (version === undefined) throw new Error(`the tar holds no ${VERSION_FILE}: not a data directory`);
  writeFileSync(join(dir, VERSION_FILE), version);
}

/** `dir/name`, refusing a name that leaves `dir` (PGlite's names start with `/`: relative to the data directory). */
function safePath(dir: string, name: string): string {
  const parts = name.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.length === 0 || parts.includes('..'))
    throw new Error(`tar entry ${name} is outside the directory`);
  return join(dir, ...parts);
}
