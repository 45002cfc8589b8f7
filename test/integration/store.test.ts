/**
 * The store suite, run against real PostgreSQL and against PGlite: sessions, events, state scopes, seq
 * allocation under concurrency, atomic list appends, LISTEN/NOTIFY followers, and bad input. Concurrency means
 * different things on the two (see `concurrency` below), and the tests' names say which.
 */
import { eq, sql } from 'drizzle-orm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import { queryRows } from '../../src/store/db/database.js';
import { EVENTS_CHANNEL, type EventNotice } from '../../src/store/repos/events.js';
import { schema, Store } from '../../src/store/index.js';
import { createTestDatabase } from '../support/services/services.js';

interface Backend {
  name: string;
  /** Opens the backend's store; `other` is another handle on the same data where the driver allows. */
  open(): Promise<{ store: Store; other: Store }>;
  /** How concurrent appends meet on this backend, for the names of the concurrency tests. */
  concurrency: string;
  /** How many server connections the store and `other` hold now (PostgreSQL only). */
  connections?(store: Store): Promise<number>;
}

const pgliteDirs: string[] = [];
afterAll(() => {
  for (const dir of pgliteDirs) rmSync(dir, { recursive: true, force: true });
});

const backends: Backend[] = [
  {
    name: 'postgres',
    async open() {
      const url = await createTestDatabase();
      const store = await Store.open(url, { poolSize: 50 });
      const other = await Store.open(url, { poolSize: 5 });
      return { store, other };
    },
    // Two stores with their own pools: appends run at once in separate transactions, and only the database's
    // row locks keep them apart. This is the setting that threatens seq allocation and list appends.
    concurrency: 'from separate pool connections',
    async connections(store) {
      const [row] = await queryRows<{ n: number }>(
        store.db,
        sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      );
      return row?.n ?? 0;
    },
  },
  {
    name: 'pglite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'agentloom-pglite-'));
      pgliteDirs.push(dir);
      // PGlite is one connection per process: the "other" handle is the same store.
      const store = await Store.open({ pglite: dir });
      return { store, other: store };
    },
    // One connection: PGlite runs a transaction exclusively, but statements of concurrently running async tasks
    // interleave between them. What can fail here is an append whose read-then-write is not one statement or one
    // transaction (another task's write lands between the read and the write).
    concurrency: 'from async tasks interleaved on its one connection',
  },
];

async function insertInvocation(store: Store, sessionId: string, id: string): Promise<void> {
  const session = await store.getSession(sessionId);
  await store.db.insert(schema.invocations).values({
    id,
    app: session!.app,
    sessionId,
    userId: session!.userId,
    rootAgent: 'root',
    definitionHash: 'h',
    status: 'running',
    maxLlmCalls: 10,
  });
}

async function expectAgentloomError(promise: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentloomError);
  expect((err as AgentloomError).code).toBe(code);
  expect((err as AgentloomError).message).toMatch(message);
}

describe.each(backends)('store on $name', (backend) => {
  let store: Store;
  let other: Store;

  beforeAll(async () => {
    ({ store, other } = await backend.open());
  });
  afterAll(async () => {
    if (other !== store) await other.close();
    await store.close();
  });

  it('creates, gets and lists sessions', async () => {
    const a = await store.createSession({ app: 'shop', userId: 'ann', state: { cart: [] } });
    const b = await store.createSession({ app: 'shop', userId: 'ann', id: 'custom-id' });
    expect(b.id).toBe('custom-id');
    expect((await store.getSession(a.id))?.state).toEqual({ cart: [] });
    const listed = await store.listSessions({ app: 'shop', userId: 'ann' });
    expect(listed.map((s) => s.id).sort()).toEqual([a.id, 'custom-id'].sort());
    expect(await store.getSession('nope')).toBeUndefined();
    await expectAgentloomError(
      store.createSession({ app: 'shop', userId: 'ann', id: 'custom-id' }),
      'CONFLICT',
      /already exists/,
    );
  });

  it('applies state deltas to the session, app: and user: scopes', async () => {
    const ann1 = await store.createSession({ app: 'scopes', userId: 'ann' });
    const ann2 = await store.createSession({ app: 'scopes', userId: 'ann' });
    const bob = await store.createSession({ app: 'scopes', userId: 'bob' });
    const otherApp = await store.createSession({ app: 'elsewhere', userId: 'ann' });
    await store.appendEvent({
      sessionId: ann1.id,
      event: {
        author: 'agent',
        actions: { stateDelta: { topic: 'tea', 'user:lang': 'fr', 'app:motd': 'hi' } },
      },
    });
    expect((await store.getSession(ann1.id))?.state).toEqual({
      topic: 'tea',
      'user:lang': 'fr',
      'app:motd': 'hi',
    });
    // user: is shared with the same user's other session, not with another user or app.
    expect((await store.getSession(ann2.id))?.state).toEqual({ 'user:lang': 'fr', 'app:motd': 'hi' });
    expect((await store.getSession(bob.id))?.state).toEqual({ 'app:motd': 'hi' });
    expect((await store.getSession(otherApp.id))?.state).toEqual({});
    // Scoped keys are stored in their own rows, never on the session row.
    const [row] = await store.db.select().from(schema.sessions).where(eq(schema.sessions.id, ann1.id));
    expect(row?.state).toEqual({ topic: 'tea' });
  });

  it('keeps temp: keys on the invocation, never on the session row or in stored history', async () => {
    const session = await store.createSession({ app: 'temp', userId: 'ann' });
    await insertInvocation(store, session.id, 'inv-temp');
    const event = await store.appendEvent({
      sessionId: session.id,
      invocationId: 'inv-temp',
      event: { author: 'agent', actions: { stateDelta: { 'temp:scratch': 42, kept: true } } },
    });
    expect(event.actions.stateDelta).toEqual({ kept: true });
    const [row] = await store.db.select().from(schema.sessions).where(eq(schema.sessions.id, session.id));
    expect(row?.state).toEqual({ kept: true });
    const [inv] = await store.db
      .select()
      .from(schema.invocations)
      .where(eq(schema.invocations.id, 'inv-temp'));
    expect(inv?.tempState).toEqual({ scratch: 42 });
    expect(await store.readState(session.id, 'inv-temp')).toEqual({ kept: true, 'temp:scratch': 42 });
    expect(await store.readState(session.id)).toEqual({ kept: true });
  });

  it(`gives 50 concurrent appends ${backend.concurrency} seq 1..50 without gaps`, async () => {
    const session = await store.createSession({ app: 'seq', userId: 'ann' });
    const stored = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 === 0 ? store : other).appendEvent({
          sessionId: session.id,
          event: { author: 'agent', content: { role: 'model', parts: [{ text: `e${i}` }] } },
        }),
      ),
    );
    expect(stored.map((e) => e.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    const listed = await store.listEvents(session.id);
    expect(listed.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(listed.map((e) => e.content?.parts[0]?.text)).size).toBe(50);
    expect((await store.getSession(session.id))?.lastSeq).toBe(50);
    // A pool opens another connection only while all of its others are busy: more than one per store means the
    // appends really ran at the same time (and the test could have caught a race).
    if (backend.connections) expect(await backend.connections(store)).toBeGreaterThan(2);
  });

  it(`loses no element of 20 concurrent appendToState calls ${backend.concurrency} on one key, in every scope`, async () => {
    const session = await store.createSession({ app: 'append', userId: 'ann' });
    const sibling = await store.createSession({ app: 'append', userId: 'ann' });
    await insertInvocation(store, session.id, 'inv-append');
    for (const key of ['findings', 'user:findings', 'app:findings', 'temp:findings']) {
      // app: and user: state is shared across sessions, so half of its appends come from a sibling session: the
      // row lock of one session would serialize them all and hide a missing lock on the shared state row.
      const shared = key.startsWith('app:') || key.startsWith('user:');
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).appendEvent({
            ...(shared && i % 4 >= 2
              ? { sessionId: sibling.id }
              : { sessionId: session.id, invocationId: 'inv-append' }),
            event: { author: `branch${i}`, actions: { appendToState: [{ key, value: { i } }] } },
          }),
        ),
      );
      const state = await store.readState(session.id, 'inv-append');
      const list = state[key] as { i: number }[];
      expect(list).toHaveLength(20);
      expect(list.map((v) => v.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    }
  });

  it('wakes a follower through NOTIFY when an event is stored', async () => {
    const session = await store.createSession({ app: 'follow', userId: 'ann' });
    const seen: number[] = [];
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const unsubscribe = await store.followSession(session.id, (notice) => {
      seen.push(notice.seq);
      wake();
    });
    // Appended through the other handle (another connection on PostgreSQL).
    await other.appendEvent({
      sessionId: session.id,
      event: { author: 'agent', content: { role: 'model', parts: [{ text: 'hello' }] } },
    });
    await woken;
    unsubscribe();
    expect(seen).toEqual([1]);
    const [event] = await store.listEvents(session.id, { afterSeq: 0 });
    expect(event?.content?.parts[0]?.text).toBe('hello');
  });

  it('sends no NOTIFY for a session nobody follows, and does once it is followed', async () => {
    const session = await store.createSession({ app: 'unfollowed', userId: 'ann' });
    const notices: EventNotice[] = [];
    const markers: string[] = [];
    let marked: () => void = () => undefined;
    const unlistenEvents = await store.listen(EVENTS_CHANNEL, (p) =>
      notices.push(JSON.parse(p) as EventNotice),
    );
    const unlistenMarker = await store.listen('agentloom_test_marker', (p) => {
      markers.push(p);
      marked();
    });
    try {
      const append = (text: string, state = false) =>
        other.appendEvent({
          sessionId: session.id,
          event: {
            author: 'agent',
            content: { role: 'model', parts: [{ text }] },
            // A state change takes the transactional append; a plain event the one-statement append.
            ...(state ? { actions: { stateDelta: { k: text } } } : {}),
          },
        });
      await append('unseen');
      await append('unseen too', true);
      // Notifications reach a listener in commit order: once the marker (committed after both appends) is here,
      // any notice of theirs would be too.
      const marker = new Promise<void>((resolve) => (marked = resolve));
      await queryRows(other.db, sql`select pg_notify('agentloom_test_marker', 'after')`);
      await marker;
      expect(markers).toEqual(['after']);
      expect(notices.filter((n) => n.sessionId === session.id)).toEqual([]);

      const seen: number[] = [];
      let woken: () => void = () => undefined;
      const both = new Promise<void>((resolve) => (woken = resolve));
      const unfollow = await store.followSession(session.id, (notice) => {
        seen.push(notice.seq);
        if (seen.length === 2) woken();
      });
      await append('seen');
      await append('seen too', true);
      await both;
      unfollow();
      expect(seen).toEqual([3, 4]);
    } finally {
      await unlistenEvents();
      await unlistenMarker();
    }
  });

  it('rejects bad input with AgentloomError and writes nothing', async () => {
    const session = await store.createSession({ app: 'bad', userId: 'ann' });
    const countEvents = async () =>
      Number(
        (
          await store.db
            .select({ n: sql<number>`count(*)` })
            .from(schema.events)
            .where(eq(schema.events.sessionId, session.id))
        )[0]?.n,
      );
    await expectAgentloomError(
      store.appendEvent({ sessionId: 'missing', event: { author: 'agent' } }),
      'NOT_FOUND',
      /session "missing" does not exist/,
    );
    await expectAgentloomError(
      store.appendEvent({ sessionId: session.id, event: { author: '' } as never }),
      'VALIDATION',
      /event is malformed: author/,
    );
    await expectAgentloomError(
      store.appendEvent({
        sessionId: session.id,
        event: { author: 'a', content: { role: 'robot', parts: [] } } as never,
      }),
      'VALIDATION',
      /content\.role/,
    );
    await expectAgentloomError(
      store.appendEvent({
        sessionId: session.id,
        event: { author: 'a', actions: { stateDelta: [1, 2] } } as never,
      }),
      'VALIDATION',
      /stateDelta/,
    );
    await expectAgentloomError(
      store.appendEvent({
        sessionId: session.id,
        event: { author: 'a', actions: { stateDelta: 'x' } } as never,
      }),
      'VALIDATION',
      /stateDelta/,
    );
    await expectAgentloomError(
      store.appendEvent({
        sessionId: session.id,
        event: { author: 'a', actions: { stateDelta: { 'temp:x': 1 } } },
      }),
      'VALIDATION',
      /temp: state keys need an invocation/,
    );
    await expectAgentloomError(
      store.createSession({ app: 'bad', userId: 'ann', state: ['no'] as never }),
      'VALIDATION',
      /state must be an object/,
    );
    await expectAgentloomError(
      store.createSession({ app: '', userId: 'ann' }),
      'VALIDATION',
      /app must be a non-empty string/,
    );
    expect(await countEvents()).toBe(0);
    expect((await store.getSession(session.id))?.lastSeq).toBe(0);
    expect((await store.getSession(session.id))?.state).toEqual({});
  });
});
