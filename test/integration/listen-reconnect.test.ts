/**
 * The LISTEN connection outlives a PostgreSQL restart (ARCHITECTURE "Failure model", "Postgres unavailable"):
 * it reconnects, LISTENs again, and tells subscribers to re-read; the pool serves queries again; a closed store
 * stops reconnecting. Runs its own server, since restarting the shared one would disturb every other test file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/store/db/database.js';
import { PgListener } from '../../src/store/db/pg-listener.js';
import { Store } from '../../src/store/store.js';
import { startLocalPostgres, type LocalServer } from '../support/services/local-services.js';
import { waitFor } from '../support/assert/wait-for.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-restart-'));
let server: LocalServer;
let port: number;

beforeAll(async () => {
  server = await startLocalPostgres(dir);
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Fast shutdown (every connection is terminated with 57P01), then the same data directory on the same port. */
async function restart(): Promise<void> {
  await server.stop();
  server = await startLocalPostgres(dir, { port });
}

/** Sends NOTIFY from a connection of its own, as another process would. */
async function notify(channel: string, payload: string): Promise<void> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query('select pg_notify($1, $2)', [channel, payload]);
  } finally {
    await client.end();
  }
}

/** Sessions currently LISTENing (their last statement was a LISTEN), excluding this query's own. */
async function listeners(): Promise<number> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where query like 'LISTEN %' and pid <> pg_backend_pid()`,
    );
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

describe('LISTEN across a PostgreSQL restart', () => {
  it('reconnects, listens again, calls the reconnect hook, and the pool serves queries again', async () => {
    const store = await Store.open(server.url, { migrate: false });
    try {
      const received: string[] = [];
      let reconnects = 0;
      await store.listen(
        'agentloom_test_restart',
        (payload) => received.push(payload),
        () => reconnects++,
      );
      await notify('agentloom_test_restart', 'before');
      await waitFor(() => received.includes('before'), { what: 'the notification before the restart' });

      await restart();

      // NOTIFY again until one arrives: a notification sent before the LISTEN is re-issued is lost by design.
      await waitFor(
        async () => {
          await notify('agentloom_test_restart', 'after');
          return received.includes('after');
        },
        { timeoutMs: 15_000, what: 'a notification after the restart' },
      );
      expect(reconnects).toBe(1);
      // The pool dropped its dead idle connections: the first query after the restart succeeds.
      const rows = await queryRows<{ one: number }>(store.db, sql`select 1 as one`);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });

  it('wakes event followers after a restart (followSession reconnect hook)', async () => {
    const store = await Store.open(server.url);
    try {
      let reconnects = 0;
      const session = await store.createSession({ app: 'reconnect', userId: 'ann' });
      await store.followSession(
        session.id,
        () => undefined,
        () => reconnects++,
      );
      await restart();
      await waitFor(() => reconnects === 1, { timeoutMs: 15_000, what: 'the followSession reconnect hook' });
    } finally {
      await store.close();
    }
  });

  it('follows a session once the server is back, when the first follow found it away', async () => {
    const store = await Store.open(server.url);
    try {
      const session = await store.createSession({ app: 'reconnect', userId: 'bea' });
      await server.stop();
      await expect(store.followSession(session.id, () => undefined)).rejects.toThrow();
      server = await startLocalPostgres(dir, { port });
      const seqs: number[] = [];
      await store.followSession(session.id, (notice) => seqs.push(notice.seq));
      await store.appendEvent({
        sessionId: session.id,
        event: {
          author: 'user',
          content: { role: 'user', parts: [{ text: 'back' }] },
          actions: { stateDelta: {}, artifactDelta: {} },
        },
      });
      await waitFor(() => seqs.includes(1), { timeoutMs: 15_000, what: "the event's notice" });
    } finally {
      await store.close();
    }
  });

  it('a listener closed while the server is down does not reconnect when it comes back', async () => {
    // Short backoff, so that a listener that ignored close() would be back well within the watch below.
    const listener = new PgListener(server.url, { minBackoffMs: 10, maxBackoffMs: 50 });
    await listener.listen('agentloom_test_closed', () => undefined);
    expect(await listeners()).toBe(1);
    await server.stop();
    await listener.close();
    server = await startLocalPostgres(dir, { port });
    const deadline = Date.now() + 1_000;
    while (Date.now() < deadline) {
      expect(await listeners()).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
});
