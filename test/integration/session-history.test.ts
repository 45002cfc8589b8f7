/**
 * A model call reads only the events it has not read before (ARCHITECTURE "Performance budget": nothing on the hot
 * path grows with history): the store's session history is a cached prefix plus the events stored after it.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { createTestDatabase } from '../support/services/services.js';

// Rows each events query of this file returned (each test file runs in its own worker).
const eventRowsRead: number[] = [];
const original = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as string | { text?: string } | undefined;
  const text = ((typeof first === 'string' ? first : first?.text) ?? '').trim();
  const last = args.at(-1);
  if (/^select .* from "events"/is.test(text) && typeof last === 'function') {
    // The pool passes a callback: count the rows it receives.
    args[args.length - 1] = (err: unknown, result: { rowCount?: number } | undefined) => {
      if (!err) eventRowsRead.push(result?.rowCount ?? 0);
      return (last as (...a: unknown[]) => unknown)(err, result);
    };
  }
  return (original as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

describe('session history on PostgreSQL', () => {
  let store: Store;
  afterAll(async () => {
    pg.Client.prototype.query = original;
    await store?.close();
  });

  it('reads only the events stored since the last read, and returns the whole history', async () => {
    store = await Store.open(await createTestDatabase());
    const session = await store.createSession({ app: 'hist', userId: 'u' });
    const append = (text: string) =>
      store.appendEvent({
        sessionId: session.id,
        event: {
          author: 'user',
          content: { role: 'user', parts: [{ text }] },
          actions: { stateDelta: {}, artifactDelta: {} },
        },
      });
    for (let i = 0; i < 30; i++) await append(`m${i}`);
    eventRowsRead.length = 0;
    const first = await store.sessionHistory(session.id);
    expect(first.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    for (let i = 30; i < 33; i++) await append(`m${i}`);
    const second = await store.sessionHistory(session.id);
    // The whole history, equal to a full read...
    expect(second).toEqual(await store.listEvents(session.id));
    expect(second.map((e) => e.seq)).toEqual(Array.from({ length: 33 }, (_, i) => i + 1));
    // ...of which the cached read fetched only the 3 new rows (the first read 30; the comparison read 33).
    expect(eventRowsRead).toEqual([30, 3, 33]);
    // Nothing new: nothing read.
    eventRowsRead.length = 0;
    expect((await store.sessionHistory(session.id)).length).toBe(33);
    expect(eventRowsRead).toEqual([0]);
  });
});
