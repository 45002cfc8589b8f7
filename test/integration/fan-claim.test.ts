/**
 * A fan-out's leaves claimed by the statement that creates them. With the in-process queue (which no other worker
 * reads), the advance that creates a parallel's branches also claims them for this process, as many as its queue
 * would start at once: they run without a claim statement each, and the worker's concurrency still bounds how
 * many run. On PGlite and PostgreSQL.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { ParallelAgent, SequentialAgent, type Engine } from '../../src/index.js';
import { queryRows } from '../../src/store/db/database.js';
import { gate, GatedLeaf } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

interface Row {
  path: string;
  status: string;
  attempt: number;
  owned: boolean;
  /** Never updated after its insert: claimed (if running) by the statement that created it. */
  same: boolean;
}

const BRANCHES = 6;

/** The app; its branch leaves are added to `leaves`. */
function fanApp(wait: Promise<void>, leaves: GatedLeaf[] = []) {
  return new SequentialAgent({
    name: 'root',
    subAgents: [
      new ParallelAgent({
        name: 'fan',
        subAgents: Array.from({ length: BRANCHES }, (_, i) => {
          const leaf = new GatedLeaf(`b${i}`, wait);
          leaves.push(leaf);
          return leaf;
        }),
      }),
      new GatedLeaf('join', Promise.resolve()),
    ],
  });
}

async function branches(engine: Engine, invocationId: string): Promise<Row[]> {
  return queryRows<Row>(
    engine.store.db,
    sql`select path, status, attempt, lease_owner is not null as owned, created_at = updated_at as same
        from nodes where invocation_id = ${invocationId} and path like 'root/fan/%' order by path`,
  );
}

/** The branch rows once `ready` holds for them (polled for up to 20 s). */
function branchesWhen(engine: Engine, invocationId: string, ready: (rows: Row[]) => boolean): Promise<Row[]> {
  return waitFor(
    async () => {
      const rows = await branches(engine, invocationId);
      return ready(rows) ? rows : undefined;
    },
    { timeoutMs: 20_000, what: 'the branch rows' },
  );
}

async function texts(engine: Engine, invocationId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of engine.events(invocationId)) {
    const text = e.content?.parts[0]?.text;
    if (e.author !== 'user' && text) out.push(text);
  }
  return out;
}

describe.each(backends)('a fan-out claimed as it is created ($name)', (backend) => {
  it('inserts every branch running under this worker, attempt 1, with no statement of its own', async () => {
    const g = gate();
    const engine = await engineOn(backend, {
      apps: [{ name: 'fan', agent: fanApp(g.promise) }],
      worker: { concurrency: 16 },
    });
    try {
      const run = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      const rows = await branchesWhen(
        engine,
        run.invocationId,
        (r) => r.length === BRANCHES && r.every((b) => b.status === 'running'),
      );
      expect(rows).toHaveLength(BRANCHES);
      for (const row of rows) {
        expect(row).toMatchObject({ status: 'running', attempt: 1, owned: true, same: true });
      }
      g.open();
      expect((await engine.wait(run.invocationId)).status).toBe('completed');
      const out = await texts(engine, run.invocationId);
      expect(out.slice(0, BRANCHES).sort()).toEqual(
        Array.from({ length: BRANCHES }, (_, i) => `b${i}`).sort(),
      );
      expect(out.slice(BRANCHES)).toEqual(['join']);
    } finally {
      g.open();
      await engine.close();
    }
  });

  it("claims no more branches than the worker's concurrency lets run; the rest are claimed by their jobs", async () => {
    const g = gate();
    const concurrency = 3;
    const leaves: GatedLeaf[] = [];
    const ended: string[] = [];
    const engine = await engineOn(backend, {
      apps: [{ name: 'fan', agent: fanApp(g.promise, leaves) }],
      worker: { concurrency },
      observer: { onStepEnd: (step) => ended.push(step.path) },
    });
    try {
      const run = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      const rows = await branchesWhen(
        engine,
        run.invocationId,
        (r) => r.length === BRANCHES && r.filter((b) => b.status === 'running').length === concurrency,
      );
      // Held at the gate: the job that created the branches (and claimed some) has ended, and its slot, like the
      // others, holds a leaf waiting on the gate; nothing else can be claimed until it opens.
      const started = () => leaves.filter((l) => l.started).length;
      await waitFor(() => ended.includes('root') && started() >= concurrency, {
        what: "the creating job's end and the worker's slots held by gated leaves",
      });
      const held = await branches(engine, run.invocationId);
      expect(started()).toBe(concurrency);
      expect(held.filter((b) => b.status === 'running')).toHaveLength(concurrency);
      expect(held.filter((b) => b.status === 'pending')).toHaveLength(BRANCHES - concurrency);
      // Some were claimed by the statement that created them (the advancing job held one slot of the three).
      const claimedAtCreation = rows.filter((b) => b.status === 'running' && b.same).length;
      expect(claimedAtCreation).toBeGreaterThanOrEqual(1);
      expect(claimedAtCreation).toBeLessThan(concurrency);
      g.open();
      expect((await engine.wait(run.invocationId)).status).toBe('completed');
      const done = await branches(engine, run.invocationId);
      expect(done.every((b) => b.status === 'completed' && b.attempt === 1)).toBe(true);
      expect((await texts(engine, run.invocationId)).at(-1)).toBe('join');
    } finally {
      g.open();
      await engine.close();
    }
  });
});
