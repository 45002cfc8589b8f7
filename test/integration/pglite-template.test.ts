/**
 * New PGlite databases start from a cached template instead of running initdb: the template is built once and
 * reused, a database made from it is migrated and runs agents, an existing directory is opened as it is (never
 * loaded over), and a template that is corrupt — or that PGlite cannot start from — is logged and the database is
 * created by initdb as without templates, with nothing of the failed load left behind.
 */
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, queryRows, Store } from '../../src/store/index.js';
import {
  readTemplate,
  templatePath,
  writeTemplate,
  type TemplateLog,
} from '../../src/store/db/pglite-template.js';
import { scripted } from '../fixtures/agents.js';
import { tarEntry, tarOf } from '../fixtures/tar-entry.js';
import { engineOn } from '../support/services/engines.js';

// PGlite's initdb in WebAssembly takes tens of seconds on a busy 2-core machine; each test runs one or two.
const SLOW_MS = 300_000;

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-template-'));
  dirs.push(dir);
  return dir;
}

/** A logger that keeps the messages it was given. */
function recordingLog(): TemplateLog & { warnings: string[]; debugs: string[] } {
  const warnings: string[] = [];
  const debugs: string[] = [];
  return {
    warnings,
    debugs,
    warn: (_fields, message) => void warnings.push(message),
    debug: (_fields, message) => void debugs.push(message),
  };
}

async function tableNames(store: Store): Promise<string[]> {
  const rows = await queryRows<{ table_name: string }>(
    store.db,
    sql`select table_name from information_schema.tables where table_schema = 'public' order by 1`,
  );
  return rows.map((r) => r.table_name);
}

/** Rewrites the template at `path` with an empty table `name` added, to tell a database made from it. */
async function markTemplate(path: string, name: string): Promise<void> {
  const tar = await readTemplate(path);
  const client = new PGlite({ loadDataDir: new Blob([tar!]) });
  try {
    await client.exec(`create table ${name} (); checkpoint;`);
    const dump = await client.dumpDataDir('none');
    await writeTemplate(path, new Uint8Array(await dump.arrayBuffer()));
  } finally {
    await client.close();
  }
}

describe('PGlite databases from a template', () => {
  const templateDir = tempDir();
  const path = templatePath(templateDir, true);
  let allTables: string[] = [];

  beforeAll(async () => {
    // The first new database builds the migrated template and caches it.
    const log = recordingLog();
    const store = await Store.open({ pglite: tempDir() }, { pgliteTemplateDir: templateDir, logger: log });
    allTables = await tableNames(store);
    await store.close();
    expect(log.warnings).toEqual([]);
  }, SLOW_MS);

  it(
    'a new directory starts from the cached template, migrated, and a run completes on it',
    async () => {
      expect(readdirSync(templateDir)).toEqual([path.slice(templateDir.length + 1)]);
      await markTemplate(path, 'from_template');
      const dir = tempDir();
      const log = recordingLog();
      const store = await Store.open({ pglite: dir }, { pgliteTemplateDir: templateDir, logger: log });
      try {
        expect(log.debugs).toContain('pglite database created from the template');
        expect(await tableNames(store)).toEqual([...allTables, 'from_template'].sort());
        expect(allTables).toContain('invocations');
        // Every committed migration is recorded: opening it again applies none.
        expect(await migrate(store.database)).toEqual([]);
      } finally {
        await store.close();
      }
      const agent = scripted('writer', 'written from a template');
      const engine = await engineOn(
        { name: 'pglite', target: async () => ({ pglite: dir }) },
        { apps: [{ name: 'notes', agent }] },
      );
      try {
        const { invocationId } = await engine.enqueue({ app: 'notes', userId: 'u', input: 'go' });
        const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
        expect(done.status).toBe('completed');
        expect(done.output).toBe('written from a template');
      } finally {
        await engine.close();
      }
    },
    SLOW_MS,
  );

  it(
    'a new database in memory starts from the template too',
    async () => {
      const log = recordingLog();
      const store = await Store.open({ pglite: 'memory' }, { pgliteTemplateDir: templateDir, logger: log });
      try {
        expect(log.debugs).toContain('pglite database created from the template');
        expect(await tableNames(store)).toEqual([...allTables, 'from_template'].sort());
      } finally {
        await store.close();
      }
    },
    SLOW_MS,
  );

  it(
    'an existing directory is opened as it is: its rows are kept and the template is not loaded over it',
    async () => {
      const dir = tempDir();
      const first = await Store.open({ pglite: dir }, { pgliteTemplateDir: templateDir });
      await first.createSession({ app: 'notes', userId: 'u', id: 'kept-session' });
      await first.close();
      await markTemplate(path, 'after_first_open');
      const log = recordingLog();
      const again = await Store.open({ pglite: dir }, { pgliteTemplateDir: templateDir, logger: log });
      try {
        expect((await again.getSession('kept-session'))?.userId).toBe('u');
        expect(await tableNames(again)).not.toContain('after_first_open');
        expect(log.debugs).not.toContain('pglite database created from the template');
      } finally {
        await again.close();
      }
    },
    SLOW_MS,
  );

  it(
    'a template that PGlite cannot start from: logged, its files removed from the directory, and initdb instead',
    async () => {
      // A checksum-good tar that holds no data directory, only a file to look for afterwards.
      const brokenDir = tempDir();
      await writeTemplate(templatePath(brokenDir, true), tarOf(tarEntry('/loaded-from-template', 'x')));
      const dir = tempDir();
      writeFileSync(join(dir, 'secret.key'), 'kept\n');
      const log = recordingLog();
      const store = await Store.open({ pglite: dir }, { pgliteTemplateDir: brokenDir, logger: log });
      try {
        expect(log.warnings).toEqual(['pglite template did not load, creating the database without it']);
        expect(await tableNames(store)).toEqual(allTables);
        await store.createSession({ app: 'notes', userId: 'u', id: 's' });
        expect(existsSync(join(dir, 'secret.key'))).toBe(true);
        expect(existsSync(join(dir, 'loaded-from-template'))).toBe(false);
        // The next start builds a good one.
        expect(existsSync(templatePath(brokenDir, true))).toBe(false);
      } finally {
        await store.close();
      }
    },
    SLOW_MS,
  );
});

describe('a corrupt PGlite template', () => {
  it(
    'is logged and removed, and the new database is created by initdb',
    async () => {
      const templateDir = tempDir();
      const path = templatePath(templateDir, true);
      writeFileSync(path, 'agentloom-pglite-template 2 sha256=00\nnot gzip at all');
      const log = recordingLog();
      const store = await Store.open({ pglite: tempDir() }, { pgliteTemplateDir: templateDir, logger: log });
      try {
        expect(log.warnings).toEqual(['pglite template unusable, creating the database without it']);
        expect(await tableNames(store)).toContain('invocations');
        await store.createSession({ app: 'notes', userId: 'u', id: 's' });
        expect((await store.getSession('s'))?.app).toBe('notes');
        // The next start builds a good one.
        expect(existsSync(path)).toBe(false);
      } finally {
        await store.close();
      }
    },
    SLOW_MS,
  );
});
