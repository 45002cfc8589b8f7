import { sql } from 'drizzle-orm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  migrate,
  openDatabase,
  queryRows,
  type Database,
  type DatabaseTarget,
} from '../../src/store/index.js';
import { createEmptyDatabase } from '../support/services/services.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

async function snapshot(database: Database): Promise<unknown> {
  const columns = await queryRows(
    database.db,
    sql`
    select table_name, column_name, data_type, is_nullable, column_default
    from information_schema.columns where table_schema = 'public' order by table_name, column_name`,
  );
  const indexes = await queryRows(
    database.db,
    sql`
    select indexname, indexdef from pg_indexes where schemaname = 'public' order by indexname`,
  );
  const applied = await queryRows(
    database.db,
    sql`select hash from drizzle.__drizzle_migrations order by id`,
  );
  return { columns, indexes, applied };
}

const targets: [string, () => Promise<DatabaseTarget>][] = [
  ['postgres', () => createEmptyDatabase()],
  [
    'pglite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'agentloom-migrate-'));
      dirs.push(dir);
      return { pglite: dir };
    },
  ],
];

describe.each(targets)('migrate on %s', (_name, target) => {
  it('creates the schema on an empty database, and a second run changes nothing', async () => {
    const database = await openDatabase(await target());
    try {
      const before = await queryRows<{ n: number }>(
        database.db,
        sql`select count(*)::int as n from information_schema.tables where table_schema = 'public'`,
      );
      expect(before[0]?.n).toBe(0);
      expect(await migrate(database)).toEqual([
        '0000_init',
        '0001_invocations_list_idx',
        '0002_sessions_followed_until',
        '0003_hot_updates',
        '0004_tool_requests_pending',
        '0005_credentials',
        '0006_invocations_ended_idx',
        '0007_invocation_traceparent',
        '0008_invocations_fork',
        '0009_budgets_agent_spends',
        '0010_rate_limits',
        '0011_plugin_run_hooks',
      ]);
      const first = await snapshot(database);
      const tables = await queryRows<{ table_name: string }>(
        database.db,
        sql`select table_name from information_schema.tables where table_schema = 'public' order by 1`,
      );
      expect(tables.map((r) => r.table_name)).toEqual([
        'agent_spends',
        'app_states',
        'artifacts',
        'credentials',
        'events',
        'invocations',
        'nodes',
        'rate_limits',
        'sessions',
        'tool_requests',
        'user_states',
      ]);
      expect(await migrate(database)).toEqual([]);
      expect(await snapshot(database)).toEqual(first);
    } finally {
      await database.close();
    }
  });
});
