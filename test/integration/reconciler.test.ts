/**
 * The reconciler's predicate (ARCHITECTURE "Failure model"): it re-wakes exactly the nodes that must run and show
 * no sign of it — never a node legitimately waiting on a child or a human, a running workflow node, a live lease,
 * a recent wake-up, or a node of an ended invocation — and only one process's pass runs at a time.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src/index.js';
import { reconcileNodes } from '../../src/store/repos/nodes.js';
import { pino } from 'pino';
import { scripted } from '../fixtures/agents.js';
import { createTestDatabase } from '../support/services/services.js';

describe('reconciler on PostgreSQL', () => {
  let url: string;
  let engine: Engine;
  let client: pg.Client;

  beforeAll(async () => {
    url = await createTestDatabase();
    engine = await createEngine({
      apps: [{ name: 'app', agent: scripted('solo', 'x') }],
      database: url,
      queue: 'local',
      worker: false,
      logger: pino({ level: 'silent' }),
    });
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await engine.close();
  });

  /** Inserts a node of `invocationId` in the given state; `ageMs` back-dates its last change. */
  async function node(
    invocationId: string,
    path: string,
    state: { kind: string; status: string; lease?: 'live' | 'expired'; ageMs: number },
  ): Promise<void> {
    const lease =
      state.lease === 'live'
        ? `now() + interval '60 seconds'`
        : state.lease === 'expired'
          ? `now() - interval '1 second'`
          : 'null';
    await client.query(
      `insert into nodes (invocation_id, path, parent_path, agent, kind, status, lease_expires_at, wake, updated_at)
       values ($1, $2, 'solo', 'solo', $3, $4, ${lease}, 1, now() - ($5 || ' milliseconds')::interval)`,
      [invocationId, path, state.kind, state.status, String(state.ageMs)],
    );
  }

  it('re-wakes only stale pending nodes and dead leases, once, under one lock', async () => {
    const live = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const ended = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const old = 60_000;
    // The root 'solo' nodes were just created pending (recent): they are left to their queued wake-ups.
    await node(live.invocationId, 'solo/pending_old', { kind: 'llm', status: 'pending', ageMs: old });
    await node(live.invocationId, 'solo/pending_recent', { kind: 'llm', status: 'pending', ageMs: 0 });
    await node(live.invocationId, 'solo/dead_lease', {
      kind: 'llm',
      status: 'running',
      lease: 'expired',
      ageMs: old,
    });
    await node(live.invocationId, 'solo/live_lease', {
      kind: 'custom',
      status: 'running',
      lease: 'live',
      ageMs: old,
    });
    await node(live.invocationId, 'solo/waiting_on_child', { kind: 'llm', status: 'waiting', ageMs: old });
    await node(live.invocationId, 'solo/paused_for_human', { kind: 'llm', status: 'paused', ageMs: old });
    await node(live.invocationId, 'solo/workflow_running', {
      kind: 'parallel',
      status: 'running',
      ageMs: old,
    });
    await node(live.invocationId, 'solo/workflow_pending', {
      kind: 'sequential',
      status: 'pending',
      ageMs: old,
    });
    await node(ended.invocationId, 'solo/pending_old', { kind: 'llm', status: 'pending', ageMs: old });
    await client.query(`update invocations set status = 'completed' where id = $1`, [ended.invocationId]);

    // Another process holds the reconciler lock: this pass does nothing.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_advisory_xact_lock(7362541002)');
      expect(await reconcileNodes(engine.store.db, { staleMs: 30_000 })).toEqual({ locked: false, jobs: [] });
      await holder.query('commit');
    } finally {
      await holder.end();
    }

    const pass = await reconcileNodes(engine.store.db, { staleMs: 30_000 });
    expect(pass.locked).toBe(true);
    expect(pass.jobs.map((j) => j.path).sort()).toEqual([
      'solo/dead_lease',
      'solo/pending_old',
      'solo/workflow_pending',
    ]);
    expect(pass.jobs.every((j) => j.invocationId === live.invocationId && j.wake === 2)).toBe(true);
    // The new wake-ups are recent now: a second pass leaves them to the queue.
    expect((await reconcileNodes(engine.store.db, { staleMs: 30_000 })).jobs).toEqual([]);
    // With no staleness threshold, the recent pending nodes (the two roots are of a live and an ended run) count too.
    const eager = await reconcileNodes(engine.store.db, { staleMs: 0 });
    expect(eager.jobs.map((j) => j.path).sort()).toEqual([
      'solo',
      'solo/dead_lease',
      'solo/pending_old',
      'solo/pending_recent',
      'solo/workflow_pending',
    ]);
  });
});
