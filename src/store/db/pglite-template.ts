/**
 * Opening PGlite, and the template a new PGlite database starts from. PGlite makes a new database by running
 * initdb in WebAssembly: most of a cold `agentloom dev` start (seconds, tens of seconds on a busy machine), where
 * writing out a tarball of an initialised database takes a fraction of that. The tarball is built on first use into
 * the per-user cache (`$XDG_CACHE_HOME/agentloom`, else `~/.cache/agentloom`), named by the PGlite version and — for
 * the template already migrated, used when the opener migrates anyway — the migrations' digest, so an upgrade builds
 * a new one (and a migration added later is applied at open like any other).
 *
 * Failure cases handled: two processes building at once each write a temporary file and rename it (a reader never
 * sees half a template); a template that cannot be read, fails its checksum or does not start is logged, removed
 * and not used — the database is created by initdb, as without templates (PGlite given a corrupt tarball fails
 * with an unhandled rejection from its decompressor, so it is only ever given a tar whose sha256 matched); a
 * directory that already holds a database is opened as it is, never written over.
 */
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { loadEnv } from '../../config/env.js';
import { migrationsDigest, migrationsFolder } from './migrations-folder.js';
import { extractDataDir } from './pgdata-tar.js';

/** Where a template that cannot be used is reported (a pino logger fits). */
export interface TemplateLog {
  warn(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Options of {@link openPgliteClient}. */
export interface OpenPgliteOptions {
  /** The opener applies the migrations right after: a new database may start from the migrated template. */
  migrating: boolean;
  /** The directory of the template files, or false: every new database runs initdb. */
  templateDir: string | false;
  log: TemplateLog;
}

/** The layout of a template file: in its name, so that files of another layout are never read. */
const FORMAT = 2;
/** First line of a template file; the sha256 (hex) of the gzip body that follows the line ends it. */
const HEADER = `agentloom-pglite-template ${FORMAT} sha256=`;
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The template directory the environment asks for: false when AGENTLOOM_PGLITE_TEMPLATE=off. */
export function defaultTemplateDir(): string | false {
  const env = loadEnv();
  if (env.AGENTLOOM_PGLITE_TEMPLATE === 'off') return false;
  // The XDG Base Directory specification: a relative $XDG_CACHE_HOME is invalid and ignored.
  const cacheHome = env.XDG_CACHE_HOME;
  return join(cacheHome && isAbsolute(cacheHome) ? cacheHome : join(homedir(), '.cache'), 'agentloom');
}

/** The template file for new databases, migrated (at the committed migrations) or just initialised. */
export function templatePath(templateDir: string, migrated: boolean): string {
  const kind = migrated ? `migrated-${migrationsDigest().slice(0, 16)}` : 'initdb';
  return join(templateDir, `pglite-${pgliteVersion()}-${kind}.v${FORMAT}.tgz`);
}

let version: string | undefined;
/** The installed PGlite's version: a template made by one PGlite is not loaded by another. */
function pgliteVersion(): string {
  if (version !== undefined) return version;
  // The package exports no package.json: found next to its CommonJS entry (dist/index.cjs).
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  version = typeof pkg.version === 'string' ? pkg.version : 'unknown';
  return version;
}

/**
 * An open PGlite client at `location` (a directory, or `memory` / `:memory:`): an existing database as it is; a new
 * one from the template when there is a good one (built now when there is none yet), else by initdb.
 */
export async function openPgliteClient(location: string, options: OpenPgliteOptions): Promise<PGlite> {
  const dir = location === 'memory' || location === ':memory:' ? undefined : location;
  if (dir !== undefined) mkdirSync(dir, { recursive: true });
  const fresh = dir === undefined || !existsSync(join(dir, 'PG_VERSION'));
  const template = fresh ? await templateTar(options) : undefined;
  let loaded: PGlite | undefined;
  if (template) {
    loaded = await loadTemplate(dir, template.tar, options.log);
    // Removed so that the next start builds a good one (a failure to remove changes nothing).
    if (!loaded) await rm(template.path, { force: true }).catch(() => undefined);
  }
  const client = loaded ?? (dir === undefined ? new PGlite() : new PGlite(dir));
  await client.waitReady;
  return client;
}

/** The template's tar and file: read from the cache, else built and cached; undefined when there is no usable one. */
async function templateTar(
  options: OpenPgliteOptions,
): Promise<{ tar: Uint8Array; path: string } | undefined> {
  if (options.templateDir === false) return undefined;
  const path = templatePath(options.templateDir, options.migrating);
  try {
    const cached = await readTemplate(path);
    if (cached !== undefined) return { tar: cached, path };
  } catch (err) {
    options.log.warn({ err, path }, 'pglite template unusable, creating the database without it');
    await rm(path, { force: true }).catch(() => undefined);
    return undefined;
  }
  let tar: Uint8Array;
  try {
    tar = await buildTemplate(options.migrating);
  } catch (err) {
    options.log.warn({ err }, 'pglite template not built, creating the database without it');
    return undefined;
  }
  try {
    await writeTemplate(path, tar);
    options.log.debug({ path }, 'pglite template cached');
  } catch (err) {
    // A read-only or full cache: this start still uses the template it built.
    options.log.warn({ err, path }, 'pglite template not cached');
  }
  return { tar, path };
}

/** The tar held in a template file; undefined when there is no file; throws when it is not a good one. */
export async function readTemplate(path: string): Promise<Uint8Array | undefined> {
  let file: Buffer;
  try {
    file = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const newline = file.indexOf(0x0a);
  const header = newline > 0 ? file.subarray(0, newline).toString('latin1') : '';
  if (!header.startsWith(HEADER)) throw new Error(`${path} is not a pglite template (header)`);
  const body = file.subarray(newline + 1);
  // The compressed body is hashed (a tenth of the tar's bytes); gunzip checks the tar's own CRC-32.
  if (sha256(body) !== header.slice(HEADER.length)) throw new Error(`${path} does not match its checksum`);
  const tar = await gunzipAsync(body);
  // PGlite takes what does not start as a tar for gzip, and a failed gunzip there is an unhandled rejection.
  if (Buffer.from(tar.subarray(257, 262)).toString('latin1') !== 'ustar') {
    throw new Error(`${path} does not hold a tar`);
  }
  return tar;
}

/** A tar of a new database made by initdb in memory, migrated when asked, checkpointed. */
async function buildTemplate(migrated: boolean): Promise<Uint8Array> {
  const client = new PGlite();
  try {
    await client.waitReady;
    if (migrated) await migrate(drizzle({ client }), { migrationsFolder: migrationsFolder() });
    // Written to the data files, so a database loaded from it has no WAL to replay first.
    await client.exec('CHECKPOINT');
    const dump = await client.dumpDataDir('none');
    return new Uint8Array(await dump.arrayBuffer());
  } finally {
    await client.close();
  }
}

/** Writes a template file whole under a temporary name, then renames it into place (atomic on one filesystem). */
export async function writeTemplate(path: string, tar: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  // The fastest level: a start reads it once (about 4.5 MB against the tar's 40), and building it is on a start's path.
  const body = await gzipAsync(tar, { level: 1 });
  const temp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, Buffer.concat([Buffer.from(`${HEADER}${sha256(body)}\n`), body]));
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/**
 * A client on a new database made from `tar`: written into `dir` with Node's fs (see pgdata-tar.ts), or loaded by
 * PGlite in memory when `dir` is undefined. Undefined when that failed (logged), with what had been written into
 * `dir` removed — only entries that were not there before (`dev` keeps its secret key in the same directory).
 */
async function loadTemplate(
  dir: string | undefined,
  tar: Uint8Array,
  log: TemplateLog,
): Promise<PGlite | undefined> {
  const before = new Set(dir === undefined ? [] : await readdir(dir));
  let client: PGlite | undefined;
  try {
    if (dir === undefined) {
      // A copy backed by an ArrayBuffer, as BlobPart's type asks (not a SharedArrayBuffer).
      client = new PGlite({ loadDataDir: new Blob([new Uint8Array(tar)]) });
    } else {
      extractDataDir(tar, dir);
      client = new PGlite(dir);
    }
    await client.waitReady;
    log.debug({ dir }, 'pglite database created from the template');
    return client;
  } catch (err) {
    log.warn({ err, dir }, 'pglite template did not load, creating the database without it');
    if (client && !client.closed) await client.close().catch(() => undefined);
    // A database another process made meanwhile holds nothing of ours (extractDataDir wrote nothing over it).
    if (dir !== undefined && !before.has('PG_VERSION') && !/already holds a database/.test(String(err))) {
      for (const entry of await readdir(dir)) {
        if (!before.has(entry)) await rm(join(dir, entry), { recursive: true, force: true });
      }
    }
    return undefined;
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
