/**
 * Group commit of hot statements over one connection (store/db/database.ts `runBatch`): statements submitted together
 * by independent callers run as one transaction and one commit, each caller gets its own rows, values reach the
 * server exactly as bound values would, and one statement's error reaches only its caller — the others still
 * commit. On PostgreSQL.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HotStatement, queryRows } from '../../src/store/db/database.js';
import { Store } from '../../src/store/store.js';
import { createTestDatabase } from '../support/services/services.js';

const P = (name: string) => sql.placeholder(name);

const ECHO = new HotStatement(
  () => sql`select txid_current()::text as tx, ${P('i')}::int as i, ${P('text')}::text as text,
    ${P('doc')}::jsonb as doc, ${P('flag')}::boolean as flag`,
  { batched: true },
);
/** Inserts `1 / d`: d = 0 raises division_by_zero for that statement alone. */
const DIVIDE = new HotStatement(
  () => sql`insert into batch_probe (v) values (100 / ${P('d')}::int) returning v`,
  { batched: true },
);

describe('a batch of hot statements from independent callers', () => {
  let store: Store;
  beforeAll(async () => {
    store = await Store.open(await createTestDatabase(), { poolSize: 4 });
    await queryRows(store.db, sql`create table batch_probe (v int not null)`);
  });
  afterAll(async () => store?.close());

  it('commits statements submitted together as one transaction, each caller getting its own rows', async () => {
    const tricky = [
      "it's",
      'back\\slash',
      'quote " and \\\' both',
      'ünïcödé ✓',
      '',
      'line\nbreak',
      '$1 ; select 1; --',
    ];
    const rows = await Promise.all(
      tricky.map((text, i) =>
        ECHO.run<{ tx: string; i: number; text: string; doc: unknown; flag: boolean }>(store.db, {
          i,
          text,
          doc: JSON.stringify({ text, nested: [i, null, true] }),
          flag: i % 2 === 0,
        }),
      ),
    );
    expect(rows.map((r) => r.length)).toEqual(tricky.map(() => 1));
    const flat = rows.map((r) => r[0] as NonNullable<(typeof r)[0]>);
    expect(flat.map((r) => r.i)).toEqual(tricky.map((_, i) => i));
    expect(flat.map((r) => r.text)).toEqual(tricky);
    expect(flat.map((r) => r.doc)).toEqual(tricky.map((text, i) => ({ text, nested: [i, null, true] })));
    expect(flat.map((r) => r.flag)).toEqual(tricky.map((_, i) => i % 2 === 0));
    // Submitted in one turn of the event loop: one transaction for all of them.
    expect(new Set(flat.map((r) => r.tx)).size).toBe(1);
  });

  it("a statement's error reaches only its caller, and the others' writes commit", async () => {
    const divisors = [1, 2, 0, 4, 5];
    const outcomes = await Promise.allSettled(
      divisors.map((d) => DIVIDE.run<{ v: number }>(store.db, { d })),
    );
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    const failed = outcomes[2] as PromiseRejectedResult;
    expect((failed.reason as { code?: string }).code).toBe('22012');
    const stored = await queryRows<{ v: number }>(store.db, sql`select v from batch_probe order by v`);
    expect(stored.map((r) => r.v)).toEqual([20, 25, 50, 100]);
  });

  it('a statement run alone still answers (no batch of one)', async () => {
    const [row] = await ECHO.run<{ i: number; text: string }>(store.db, {
      i: 7,
      text: 'alone',
      doc: '{}',
      flag: false,
    });
    expect(row).toMatchObject({ i: 7, text: 'alone' });
  });
});

/** A statement run alone: a named prepared statement of the connection. */
const PROBE = new HotStatement(() => sql`select ${P('i')}::int + 1 as next /* plan probe */`);

describe("the engine's connections", () => {
  it('plan a prepared statement once (a generic plan from its first execution), not once per execution', async () => {
    const one = await Store.open(await createTestDatabase(), { poolSize: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        expect(await PROBE.run<{ next: number }>(one.db, { i })).toEqual([{ next: i + 1 }]);
      }
      // One connection: the probe's prepared statement is in this session's catalogue.
      const [plans] = await queryRows<{ generic: number; custom: number }>(
        one.db,
        sql`select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements
            where statement like '%plan probe%' and statement not like '%pg_prepared_statements%'`,
      );
      // PostgreSQL's default plans each of the first five executions anew (custom plans).
      expect(plans).toEqual({ generic: 3, custom: 0 });
    } finally {
      await one.close();
    }
  });
});
