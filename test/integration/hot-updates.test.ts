/**
 * Rows updated in place on every step are updated heap-only (HOT): a session's seq bump (one per stored event)
 * changes no indexed column, and the table leaves room on its pages for the new versions, so PostgreSQL writes
 * no new index entries for it. On PostgreSQL (the statistics are PostgreSQL's own).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/index.js';
import { createTestDatabase } from '../support/services/services.js';

const APPENDS = 40;

describe("a session's seq bump", () => {
  it('is a heap-only update: no index entry per stored event', async () => {
    const url = await createTestDatabase();
    const store = await Store.open(url, { poolSize: 2 });
    let sessionId: string;
    try {
      sessionId = (await store.createSession({ app: 'hot', userId: 'ann' })).id;
      for (let i = 0; i < APPENDS; i++) {
        await store.appendEvent({
          sessionId,
          event: { author: 'agent', content: { role: 'model', parts: [{ text: `e${i}` }] } },
        });
      }
      expect((await store.getSession(sessionId))?.lastSeq).toBe(APPENDS);
    } finally {
      // Its backends exit and flush their table statistics.
      await store.close();
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      let stats = { upd: 0, hot: 0 };
      for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
        const { rows } = await client.query<{ upd: number; hot: number }>(
          `select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_user_tables where relname = 'sessions'`,
        );
        stats = rows[0] ?? stats;
        if (stats.upd >= APPENDS) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stats.upd).toBeGreaterThanOrEqual(APPENDS);
      // Nearly all: a bump finds no room only when its page is full of versions not yet pruned.
      expect(stats.hot).toBeGreaterThanOrEqual(stats.upd * 0.75);
    } finally {
      await client.end();
    }
  });
});
