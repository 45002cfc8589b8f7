/**
 * Retention: what `engine.prune` / `agentloom prune` / the workers' retention delete and what they
 * keep — every status, a session with a live run, the audit trail of answers, artifacts; batches; two pruners at
 * once; the background pass's advisory lock; a prune running while runs are enqueued into the sessions it prunes.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FunctionTool, SequentialAgent, type Engine, type EngineObserver } from '../../src/index.js';
import { openDatabase } from '../../src/store/index.js';
import { queryRows, type Db } from '../../src/store/db/database.js';
import type { PruneCounts } from '../../src/store/repos/prune.js';
import { call, scripted, seenText } from '../fixtures/agents.js';
import { backends, engineOn, type Backend } from '../support/services/engines.js';
import { runCli, show } from '../support/processes/cli.js';
import { waitFor } from '../support/assert/wait-for.js';

const postgres = backends.find((b) => b.name === 'postgres') as Backend;

/** An app whose second agent completes, pauses on a confirmation, or fails, as the input says. */
function shopApp(name = 'shop') {
  const publish = new FunctionTool({
    name: 'publish',
    description: 'publishes',
    parameters: z.object({ what: z.string() }),
    requireConfirmation: true,
    execute: ({ what }) => ({ published: what }),
  });
  const writer = scripted('writer', 'a draft');
  const publisher = scripted(
    'publisher',
    (turn) => {
      const seen = seenText(turn);
      if (seen.includes('fail')) throw new Error('the model broke');
      if (seen.includes('pause') && turn.callIndex === 0) return call('publish', { what: 'post' });
      return 'done';
    },
    { tools: [publish] },
  );
  return { name, agent: new SequentialAgent({ name: 'pipeline', subAgents: [writer, publisher] }) };
}

async function run(engine: Engine, input: string, options: { app?: string; sessionId?: string } = {}) {
  const { invocationId, sessionId } = await engine.enqueue({
    app: options.app ?? 'shop',
    userId: 'u',
    input,
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
  });
  const view = await engine.wait(invocationId, { timeoutMs: 60_000 });
  return { id: invocationId, sessionId, view };
}

/** Moves a run's end `days` into the past. */
async function age(db: Db, id: string, days: number): Promise<void> {
  await db.execute(
    sql`update invocations set ended_at = now() - make_interval(days => ${days}) where id = ${id}`,
  );
}

async function countWhere(db: Db, table: string, column: string, ids: string[]): Promise<number> {
  const [row] = await queryRows<{ n: string }>(
    db,
    sql`select count(*) as n from ${sql.raw(table)} where ${sql.raw(column)} = any(${sql.param(ids)}::text[])`,
  );
  return Number(row?.n);
}

async function exists(db: Db, table: string, id: string): Promise<boolean> {
  return (await countWhere(db, table, 'id', [id])) === 1;
}

describe.each(backends)('prune on $name', (backend) => {
  it('deletes ended runs older than the window with their rows; keeps live runs, recent runs and live sessions', async () => {
    const engine = await engineOn(backend, { apps: [shopApp(), shopApp('other')] });
    const db = engine.store.db;
    try {
      const completed = await run(engine, 'plain');
      expect(completed.view.status).toBe('completed');
      const failed = await run(engine, 'fail please');
      expect(failed.view.status).toBe('failed');
      const cancelled = await run(engine, 'pause please');
      expect(cancelled.view.status).toBe('paused');
      expect((await engine.cancel(cancelled.id)).status).toBe('cancelled');
      const approved = await run(engine, 'pause please');
      await engine.confirm(approved.view.pending[0]!.callId, {
        confirmed: true,
        by: 'ann',
        invocationId: approved.id,
      });
      expect((await engine.wait(approved.id, { timeoutMs: 60_000 })).status).toBe('completed');
      const paused = await run(engine, 'pause please');
      expect(paused.view.status).toBe('paused');
      // A session with an old ended run and a live (paused) one.
      const oldInShared = await run(engine, 'plain');
      const liveInShared = await run(engine, 'pause please', { sessionId: oldInShared.sessionId });
      expect(liveInShared.view.status).toBe('paused');
      const recent = await run(engine, 'plain');
      const otherApp = await run(engine, 'plain', { app: 'other' });
      await db.execute(
        sql`insert into artifacts (session_id, name, version, mime, data)
            values (${completed.sessionId}, 'report.txt', 0, 'text/plain', '\\x6869'::bytea)`,
      );
      const doomed = [completed, failed, cancelled, approved, oldInShared];
      for (const r of [...doomed, otherApp]) await age(db, r.id, 40);
      await age(db, recent.id, 2);
      // The paused runs look old too: a live run is never pruned, however old.
      await db.execute(
        sql`update invocations set created_at = now() - interval '90 days', updated_at = now() - interval '90 days'
            where status = 'paused'`,
      );
      const ids = doomed.map((r) => r.id);
      const goneSessions = [completed, failed, cancelled, approved].map((r) => r.sessionId);
      const before = {
        eventsOfShared: await countWhere(db, 'events', 'invocation_id', [liveInShared.id]),
        toolRequests: await countWhere(db, 'tool_requests', 'invocation_id', ids),
        nodes: await countWhere(db, 'nodes', 'invocation_id', ids),
        events: await countWhere(db, 'events', 'invocation_id', ids),
      };
      expect(before.toolRequests).toBe(2); // the cancelled request and the approved one: the audit trail
      const expected: PruneCounts = {
        invocations: 5,
        sessions: 4,
        events: before.events,
        nodes: before.nodes,
        toolRequests: 2,
        artifacts: 1,
      };

      const dry = await engine.prune({ olderThan: '30d', app: 'shop', dryRun: true });
      expect(dry).toEqual(expected);
      expect(await countWhere(db, 'invocations', 'id', ids)).toBe(5); // a dry run deletes nothing

      const pruned = await engine.prune({ olderThan: '30d', app: 'shop', batchSize: 2 });
      expect(pruned).toEqual(expected);
      expect(await countWhere(db, 'invocations', 'id', ids)).toBe(0);
      expect(await countWhere(db, 'events', 'invocation_id', ids)).toBe(0);
      expect(await countWhere(db, 'nodes', 'invocation_id', ids)).toBe(0);
      expect(await countWhere(db, 'tool_requests', 'invocation_id', ids)).toBe(0);
      expect(await countWhere(db, 'sessions', 'id', goneSessions)).toBe(0);
      expect(await countWhere(db, 'artifacts', 'session_id', [completed.sessionId])).toBe(0);
      // Kept: the live runs (and their pending requests), the recent run, the other app's run, the live session.
      for (const kept of [paused, liveInShared, recent, otherApp])
        expect(await exists(db, 'invocations', kept.id)).toBe(true);
      expect(await exists(db, 'sessions', oldInShared.sessionId)).toBe(true);
      expect(await countWhere(db, 'events', 'invocation_id', [liveInShared.id])).toBe(before.eventsOfShared);
      expect((await engine.get(liveInShared.id)).pending).toHaveLength(1);
      // The live run still completes after the prune.
      await engine.confirm((await engine.get(liveInShared.id)).pending[0]!.callId, {
        confirmed: true,
        invocationId: liveInShared.id,
      });
      expect((await engine.wait(liveInShared.id, { timeoutMs: 60_000 })).status).toBe('completed');
      // Nothing left to prune in that app; the other app's run goes when asked.
      expect((await engine.prune({ olderThan: '30d', app: 'shop' })).invocations).toBe(0);
      expect((await engine.prune({ olderThan: '30d', statuses: ['failed'] })).invocations).toBe(0);
      expect((await engine.prune({ olderThan: '30d' })).invocations).toBe(1);
      expect(await exists(db, 'invocations', otherApp.id)).toBe(false);
    } finally {
      await engine.close();
    }
  });
});

describe('prune on postgres: concurrency', () => {
  it('two pruners at once delete every run once, in batches, and never fail', async () => {
    const target = await postgres.target();
    const engine = await engineOn({ name: 'postgres', target: async () => target }, { apps: [shopApp()] });
    const second = await engineOn(
      { name: 'postgres', target: async () => target },
      {
        apps: [shopApp()],
        worker: false,
      },
    );
    try {
      const runs = await Promise.all(Array.from({ length: 30 }, (_, i) => run(engine, `plain ${i}`)));
      for (const r of runs) await age(engine.store.db, r.id, 10);
      const [a, b] = await Promise.all([
        engine.prune({ olderThan: '1d', batchSize: 3 }),
        second.prune({ olderThan: '1d', batchSize: 3 }),
      ]);
      expect(a.invocations + b.invocations).toBe(30);
      expect(a.sessions + b.sessions).toBe(30);
      expect(
        await countWhere(
          engine.store.db,
          'invocations',
          'id',
          runs.map((r) => r.id),
        ),
      ).toBe(0);
    } finally {
      await second.close();
      await engine.close();
    }
  });

  it("the workers' retention prunes in the background, one process at a time, and reports what it deleted", async () => {
    const target = await postgres.target();
    const seen: PruneCounts[] = [];
    const observer: EngineObserver = { onPrune: (counts) => seen.push(counts) };
    const producer = await engineOn({ name: 'postgres', target: async () => target }, { apps: [shopApp()] });
    const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => run(producer, `plain ${i}`)));
    for (const r of runs) await age(producer.store.db, r.id, 3);
    // Another process holds the prune lock (it is pruning): this worker's passes leave the work to it.
    const holder = await openDatabase(target);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding = holder.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(7362541003)`);
      await released;
    });
    const worker = await engineOn(
      { name: 'postgres', target: async () => target },
      {
        apps: [shopApp()],
        retention: { olderThan: '1d', intervalMs: 100, batchSize: 4 },
        observer,
      },
    );
    try {
      // Several passes run while the lock is held; none deletes anything.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(seen).toEqual([]);
      expect(
        await countWhere(
          producer.store.db,
          'invocations',
          'id',
          runs.map((r) => r.id),
        ),
      ).toBe(6);
      release();
      await holding;
      await waitFor(
        async () =>
          (await countWhere(
            producer.store.db,
            'invocations',
            'id',
            runs.map((r) => r.id),
          )) === 0,
        { timeoutMs: 30_000, intervalMs: 100, what: 'retention to delete the aged runs' },
      );
      expect(seen.reduce((n, c) => n + c.invocations, 0)).toBe(6);
      expect(seen.every((c) => c.invocations <= 4)).toBe(true);
    } finally {
      release();
      await worker.close();
      await producer.close();
      await holder.close();
    }
  });

  it('a prune running while runs are enqueued into the sessions it prunes loses nothing that should stay', async () => {
    const target = await postgres.target();
    const engine = await engineOn({ name: 'postgres', target: async () => target }, { apps: [shopApp()] });
    const pruner = await engineOn(
      { name: 'postgres', target: async () => target },
      {
        apps: [shopApp()],
        worker: false,
      },
    );
    try {
      const old = await Promise.all(Array.from({ length: 60 }, (_, i) => run(engine, `plain ${i}`)));
      for (const r of old) await age(engine.store.db, r.id, 10);
      let loading = true;
      const pruning = (async () => {
        let deleted = 0;
        while (loading) deleted += (await pruner.prune({ olderThan: '1d', batchSize: 1 })).invocations;
        return deleted + (await pruner.prune({ olderThan: '1d' })).invocations;
      })();
      // New runs: half continue the old runs' sessions (which the pruner is deleting), half in new sessions.
      const fresh = await Promise.all([
        ...old.map((r, i) => run(engine, `again ${i}`, { sessionId: r.sessionId })),
        ...Array.from({ length: 20 }, (_, i) => run(engine, `new ${i}`)),
      ]);
      loading = false;
      expect(await pruning).toBe(60);
      for (const r of fresh) {
        expect(r.view.status).toBe('completed');
        const view = await engine.get(r.id);
        expect(view.status).toBe('completed');
        const session = await engine.getSession(r.sessionId);
        const own = session.events.filter((e) => e.invocationId === r.id);
        // Its whole history is there: the input first, the last agent's answer last.
        expect(own[0]?.author).toBe('user');
        expect(own.filter((e) => e.author === 'publisher').length).toBeGreaterThan(0);
        expect(view.output).toBe('done');
      }
      expect(
        await countWhere(
          engine.store.db,
          'invocations',
          'id',
          old.map((r) => r.id),
        ),
      ).toBe(0);
    } finally {
      await pruner.close();
      await engine.close();
    }
  });

  it('an enqueue into a session that is being pruned either keeps the session or starts it anew, never fails', async () => {
    const target = await postgres.target();
    const engine = await engineOn({ name: 'postgres', target: async () => target }, { apps: [shopApp()] });
    const pruner = await engineOn(
      { name: 'postgres', target: async () => target },
      {
        apps: [shopApp()],
        worker: false,
      },
    );
    const holder = await openDatabase(target);
    const waiting = async (): Promise<number> =>
      Number(
        (
          await queryRows<{ n: string }>(
            holder.db,
            sql`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
          )
        )[0]?.n,
      );
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    try {
      const old = await run(engine, 'plain');
      await age(engine.store.db, old.id, 10);
      // The worst interleaving, made certain: the enqueue has read the session and waits to insert its run while
      // the pruner decides the session's fate. (A table lock holds every insert into invocations.)
      let locked: () => void = () => undefined;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holding = holder.db.transaction(async (tx) => {
        await tx.execute(sql`lock table invocations in share row exclusive mode`);
        locked();
        await released;
      });
      await isLocked;
      const again = run(engine, 'again', { sessionId: old.sessionId });
      await waitFor(async () => (await waiting()) >= 1, { what: 'the enqueue to wait', intervalMs: 20 });
      const pruning = pruner.prune({ olderThan: '1d' });
      await waitFor(async () => (await waiting()) >= 2, { what: 'the prune to wait', intervalMs: 20 });
      release();
      await holding;
      const [continued, pruned] = await Promise.all([again, pruning]);
      expect(continued.view).toMatchObject({ status: 'completed', output: 'done' });
      expect(continued.sessionId).toBe(old.sessionId);
      expect(pruned).toMatchObject({ invocations: 1, sessions: 0 });
      expect(await exists(engine.store.db, 'sessions', old.sessionId)).toBe(true);
      expect(await exists(engine.store.db, 'invocations', old.id)).toBe(false);
    } finally {
      release();
      await holder.close();
      await pruner.close();
      await engine.close();
    }
  });

  it('agentloom prune: --dry-run counts, the real run deletes, bad flags name the flag', async () => {
    const target = await postgres.target();
    const engine = await engineOn({ name: 'postgres', target: async () => target }, { apps: [shopApp()] });
    try {
      const runs = await Promise.all([run(engine, 'plain 1'), run(engine, 'plain 2')]);
      await age(engine.store.db, runs[0]!.id, 8);
      const env = { DATABASE_URL: target as string };
      const dry = await runCli(['prune', '--older-than', '7d', '--dry-run'], { env });
      expect(dry.code, show(dry)).toBe(0);
      expect(dry.stdout).toMatch(
        /^prune --dry-run: would delete 1 run, 1 session, \d+ events, 3 nodes, 0 tool requests, 0 artifacts/m,
      );
      expect(await exists(engine.store.db, 'invocations', runs[0]!.id)).toBe(true);
      const real = await runCli(['prune', '--older-than', '7d'], { env });
      expect(real.code, show(real)).toBe(0);
      expect(real.stdout).toMatch(/^prune: deleted 1 run, 1 session/m);
      expect(await exists(engine.store.db, 'invocations', runs[0]!.id)).toBe(false);
      expect(await exists(engine.store.db, 'invocations', runs[1]!.id)).toBe(true);
      const unitless = await runCli(['prune', '--older-than', '30'], { env });
      expect(unitless.code).toBe(1);
      expect(unitless.stderr).toContain('--older-than: "30" is not a duration; write a number and a unit');
      const live = await runCli(['prune', '--older-than', '1d', '--status', 'completed,paused'], { env });
      expect(live.code).toBe(1);
      expect(live.stderr).toContain('--status: "paused" cannot be pruned');
    } finally {
      await engine.close();
    }
  });
});
