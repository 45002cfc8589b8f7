/**
 * A hot statement binds each named placeholder once (src/store/db/database.ts `shareRepeatedPlaceholders`): every
 * use of `id` refers to one parameter, values that are not placeholders keep their own, and a text whose `$n` are
 * not drizzle's own numbering is left alone.
 */
import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import { shareRepeatedPlaceholders } from '../../src/store/db/database.js';
import { P } from '../../src/store/repos/step-rows.js';

const compile = (query: ReturnType<typeof sql>) => new PgDialect().sqlToQuery(query);

describe('shareRepeatedPlaceholders', () => {
  it('binds every use of a placeholder to one parameter, in first-use order', () => {
    const { sql: text, params } = compile(
      sql`update nodes set status = ${P('status')} where invocation_id = ${P('id')} and path = ${P('path')}
          and exists (select 1 from invocations where id = ${P('id')} and ${7} > 0 and session_id = ${P('sessionId')})
          returning ${P('id')}::text, ${P('path')}`,
    );
    expect(params).toHaveLength(8);
    const shared = shareRepeatedPlaceholders(text, params);
    expect(shared.text).toBe(
      `update nodes set status = $1 where invocation_id = $2 and path = $3
          and exists (select 1 from invocations where id = $2 and $4 > 0 and session_id = $5)
          returning $2::text, $3`,
    );
    expect(shared.params.map((p) => (typeof p === 'number' ? p : (p as { name: string }).name))).toEqual([
      'status',
      'id',
      'path',
      7,
      'sessionId',
    ]);
  });

  it('keeps a value that is not a placeholder apart, even when equal to another', () => {
    const { sql: text, params } = compile(sql`select ${1}, ${1}, ${P('a')}, ${P('a')}`);
    expect(shareRepeatedPlaceholders(text, params)).toEqual({
      text: 'select $1, $2, $3, $3',
      params: [1, 1, params[2]],
    });
  });

  it('leaves a text alone when its $n are not drizzle’s numbering', () => {
    const text = "select $1, '$2 in a literal', $2";
    const params = [P('a'), P('a')];
    expect(shareRepeatedPlaceholders(text, params)).toEqual({ text, params });
  });
});
