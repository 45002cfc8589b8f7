/**
 * The paginated invocation list (`GET /v1/invocations`) on PostgreSQL with thousands of rows: every shape of the
 * query the API builds — all apps, one app, a key's app list, with and without a cursor — is answered by walking
 * an index in order (no Sort node, no sequential scan), and paging with the cursor returns exactly the rows of
 * one ORDER BY, each once.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  invocationsPageQuery,
  listInvocationsPage,
  openDatabase,
  queryRows,
  type Database,
  type InvocationPageOptions,
} from '../../src/store/index.js';
import { createTestDatabase } from '../support/services/services.js';

const ROWS = 3_000;
const APPS = ['alpha', 'beta', 'gamma'];

let url: string;
let database: Database;
let client: pg.Client;

beforeAll(async () => {
  url = await createTestDatabase();
  database = await openDatabase(url);
  client = new pg.Client({ connectionString: url });
  await client.connect();
  // Rows of three apps whose creation times repeat (ties are broken by id), as a busy system would have them.
  await client.query(
    `
    INSERT INTO sessions (id, app, user_id) SELECT 's' || i, ($1::text[])[(i % 3) + 1], 'u' || (i % 7)
      FROM generate_series(1, ${ROWS}) AS i`,
    [APPS],
  );
  await client.query(
    `
    INSERT INTO invocations (id, app, session_id, user_id, root_agent, definition_hash, status, max_llm_calls, created_at)
    SELECT 'inv_' || lpad(i::text, 6, '0'), ($1::text[])[(i % 3) + 1], 's' || i, 'u' || (i % 7), 'root', 'h',
           CASE WHEN i % 5 = 0 THEN 'failed' ELSE 'completed' END, 10,
           timestamptz '2026-01-01 00:00:00+00' + ((i / 4) || ' milliseconds')::interval
      FROM generate_series(1, ${ROWS}) AS i`,
    [APPS],
  );
  await client.query('ANALYZE invocations');
});

afterAll(async () => {
  await client?.end();
  await database?.close();
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The plan PostgreSQL picks for the statement `listInvocationsPage` runs with these options. */
async function planOf(options: InvocationPageOptions): Promise<PlanNode[]> {
  const query = invocationsPageQuery(database.db, options);
  if (!query) throw new Error('no statement for these options');
  const { sql: text, params } = query.toSQL();
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) ${text}`,
    params,
  );
  return nodes(rows[0]!['QUERY PLAN'][0].Plan);
}

/** A cursor in the middle of the table (the 1000th newest row). */
async function middleCursor(): Promise<{ createdAt: string; id: string }> {
  const page = await listInvocationsPage(database.db, { limit: 1_000 });
  const last = page.rows.at(-1)!;
  expect(page.next?.id).toBe(last.id);
  return page.next!;
}

describe('the invocation list on PostgreSQL', () => {
  it('walks an index in the list order for every filter shape: no sort, no sequential scan', async () => {
    const cursor = await middleCursor();
    const shapes: [string, InvocationPageOptions, string][] = [
      ['all apps', { limit: 50 }, 'invocations_created_idx'],
      ['all apps after a cursor', { limit: 50, cursor }, 'invocations_created_idx'],
      ['one app', { limit: 50, app: 'beta' }, 'invocations_app_created_idx'],
      ['one app after a cursor', { limit: 50, app: 'beta', cursor }, 'invocations_app_created_idx'],
      [
        "a key's apps after a cursor",
        { limit: 50, apps: ['alpha', 'gamma'], cursor },
        'invocations_created_idx',
      ],
    ];
    for (const [name, options, index] of shapes) {
      const plan = await planOf(options);
      const types = plan.map((n) => n['Node Type']);
      expect({ name, types }).not.toMatchObject({ types: expect.arrayContaining(['Sort']) });
      expect({ name, types }).not.toMatchObject({ types: expect.arrayContaining(['Seq Scan']) });
      expect({ name, indexes: plan.flatMap((n) => n['Index Name'] ?? []) }).toEqual({
        name,
        indexes: [index],
      });
    }
  });

  it('pages through one app with the cursor: the rows of one ORDER BY, each exactly once', async () => {
    const expected = await queryRows<{ id: string }>(
      database.db,
      sql`select id from invocations where app = 'gamma' order by created_at desc, id desc`,
    );
    const seen: string[] = [];
    let cursor: InvocationPageOptions['cursor'];
    for (let pages = 0; pages < 100; pages++) {
      const page = await listInvocationsPage(database.db, { app: 'gamma', limit: 70, cursor });
      seen.push(...page.rows.map((r) => r.id));
      if (!page.next) break;
      cursor = page.next;
    }
    expect(seen).toEqual(expected.map((r) => r.id));
    expect(seen.length).toBe(ROWS / 3);
  });

  it('answers an empty app list with no rows and no statement', async () => {
    expect(invocationsPageQuery(database.db, { limit: 10, apps: [] })).toBeUndefined();
    expect(await listInvocationsPage(database.db, { limit: 10, apps: [] })).toEqual({
      rows: [],
      next: undefined,
    });
  });
});
