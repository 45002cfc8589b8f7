/**
 * Event NOTIFYs only for followed sessions (`sessions.followed_until`): the statements that store a step's events
 * (a sequence step's completion, a parallel branch's end, a workflow advance, the enqueue) send a NOTIFY only when
 * some process follows the session, because NOTIFY serialises committing transactions database-wide. A follower
 * still sees every event as it is stored. On PGlite and PostgreSQL, through the engine's own statements.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEvent,
  ParallelAgent,
  SequentialAgent,
  type Engine,
  type Event,
} from '../../src/index.js';
import { queryRows } from '../../src/store/db/database.js';
import { EVENTS_CHANNEL, type EventNotice } from '../../src/store/repos/events.js';
import { SaysPath } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

const agent = new SequentialAgent({
  name: 'root',
  subAgents: [
    new SaysPath('a'),
    new ParallelAgent({ name: 'fan', subAgents: [new SaysPath('b1'), new SaysPath('b2')] }),
    new SaysPath('c'),
  ],
});

/** Every EVENTS_CHANNEL notice this engine's store receives, and a marker to know all earlier ones arrived. */
async function noticesOf(engine: Engine) {
  const notices: EventNotice[] = [];
  let marked: () => void = () => undefined;
  const unlistenEvents = await engine.store.listen(EVENTS_CHANNEL, (p) =>
    notices.push(JSON.parse(p) as EventNotice),
  );
  const unlistenMarker = await engine.store.listen('agentloom_test_marker', () => marked());
  return {
    notices,
    /** Resolves once every notice committed before now has arrived (notifications arrive in commit order). */
    async drain(): Promise<void> {
      const marker = new Promise<void>((resolve) => (marked = resolve));
      await queryRows(engine.store.db, sql`select pg_notify('agentloom_test_marker', 'drain')`);
      await marker;
    },
    async close(): Promise<void> {
      await unlistenEvents();
      await unlistenMarker();
    },
  };
}

describe.each(backends)('event NOTIFYs only for followed sessions ($name)', (backend) => {
  it('an unfollowed run sends none; a followed one notifies each stored step, up to its last event', async () => {
    const engine = await engineOn(backend, { apps: [{ name: 'fan', agent }] });
    const listener = await noticesOf(engine);
    try {
      const first = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      expect((await engine.wait(first.invocationId)).status).toBe('completed');
      await listener.drain();
      expect(listener.notices.filter((n) => n.sessionId === first.sessionId)).toEqual([]);

      // Follow the session, then run a second invocation in it: the sequence steps, the branch ends and the
      // advances all store events, and each such statement notifies.
      const woken: number[] = [];
      const unfollow = await engine.store.followSession(first.sessionId, (n) => woken.push(n.seq));
      const second = await engine.enqueue({
        app: 'fan',
        userId: 'u',
        input: 'again',
        sessionId: first.sessionId,
      });
      expect((await engine.wait(second.invocationId)).status).toBe('completed');
      await listener.drain();
      unfollow();
      const events: Event[] = [];
      for await (const e of engine.events(second.invocationId)) events.push(e);
      const ownSeqs = new Set(events.map((e) => e.seq));
      const noticed = listener.notices.filter((n) => n.sessionId === first.sessionId).map((n) => n.seq);
      expect(noticed.every((seq) => ownSeqs.has(seq))).toBe(true);
      // The user event, a, b1 and b2 (one statement or two), the join's advance, c: at least five commits.
      expect(new Set(noticed).size).toBeGreaterThanOrEqual(5);
      expect(Math.max(...noticed)).toBe(Math.max(...ownSeqs));
      expect(woken).toEqual(noticed);
    } finally {
      await listener.close();
      await engine.close();
    }
  });

  it('engine.events with follow marks the session followed, so the steps it waits for notify it', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    class Slow extends BaseAgent {
      protected override async *runImpl(): AsyncGenerator<Event, void, undefined> {
        await gate;
        yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'late' }] } });
      }
    }
    const engine = await engineOn(backend, {
      apps: [
        { name: 'slow', agent: new SequentialAgent({ name: 'root', subAgents: [new Slow({ name: 's' })] }) },
      ],
    });
    const listener = await noticesOf(engine);
    try {
      const run = await engine.enqueue({ app: 'slow', userId: 'u', input: 'go' });
      const followed = async () =>
        (
          await queryRows<{ followed: boolean }>(
            engine.store.db,
            sql`select coalesce(followed_until > now(), false) as followed from sessions where id = ${run.sessionId}`,
          )
        )[0]?.followed;
      expect(await followed()).toBe(false);
      const seen: Event[] = [];
      const follow = (async () => {
        for await (const e of engine.events(run.invocationId, { follow: true })) seen.push(e);
      })();
      // The follower has registered and read the user event; it now waits for a notice.
      await waitFor(() => seen.length === 1, {
        timeoutMs: 20_000,
        what: 'the follower to read the user event',
      });
      expect(await followed()).toBe(true);
      release();
      await follow;
      await listener.drain();
      expect(seen.map((e) => e.author)).toContain('s');
      // The step's event and the root's end commit together: the notice carries the newest seq of the statement.
      const last = seen.at(-1) as Event;
      expect(listener.notices.filter((n) => n.sessionId === run.sessionId).map((n) => n.seq)).toContain(
        last.seq,
      );
    } finally {
      release();
      await listener.close();
      await engine.close();
    }
  });
});
