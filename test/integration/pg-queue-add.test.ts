/**
 * Wake-ups on BullMQ's PostgreSQL backend: a few jobs are added one `add_job` insert each, because the
 * backend's bulk add creates two temporary tables per call (catalog writes, ~26 KB of WAL: 3 ms for one job, 11 ms
 * under 200 concurrent enqueues, which halved the PostgreSQL-only mode's W2 throughput). A large group (a fan-out
 * no worker had slots for) still goes in one bulk add. Every job added either way is delivered, once. And the
 * mode's queue commits without waiting for the disk (`synchronous_commit = off` on its connections): a job is a
 * wake-up that the reconciler re-derives from the nodes if a server crash loses it.
 *
 * Observed through the statements this process sends (a hook on pg's client) and the jobs the handler receives on
 * a real PostgreSQL; nothing here is timed.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { BaseAgent, createEngine, createEvent } from '../../src/index.js';
import { BULLMQ_PG_SCHEMA, BullmqQueue } from '../../src/queue/bullmq-queue.js';
import type { StepJob, StopConsuming } from '../../src/queue/step-queue.js';
import { createResilientPool } from '../../src/store/db/pg-pool.js';
import { recordSentStatements } from '../support/assert/sent-statements.js';
import { freePort, startLocalPostgres, type LocalServer } from '../support/services/local-services.js';
import { createTestDatabase, testQueuePrefix } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

const sent = recordSentStatements();
const url = await createTestDatabase();

const open: { queue: BullmqQueue; stop?: StopConsuming }[] = [];
afterEach(async () => {
  for (const { queue, stop } of open.splice(0)) {
    await stop?.();
    await queue.close();
  }
});

function pgQueue(): BullmqQueue {
  const queue = new BullmqQueue({
    connection: { postgres: createResilientPool(url, 5, { searchPath: BULLMQ_PG_SCHEMA }) },
    prefix: testQueuePrefix(),
    leaseMs: 30_000,
  });
  open.push({ queue });
  return queue;
}

function jobs(count: number, tag: string): StepJob[] {
  return Array.from({ length: count }, (_, i) => ({ invocationId: `${tag}-${i}`, path: 'root', wake: 0 }));
}

/** The statements sent while `work` ran that call one of BullMQ's add functions, by function. */
async function adds(work: () => Promise<void>): Promise<{ single: number; bulk: number }> {
  sent.length = 0;
  await work();
  return {
    single: sent.filter((s) => /\badd_job\s*\(/.test(s)).length,
    bulk: sent.filter((s) => /\badd_jobs_bulk\s*\(/.test(s)).length,
  };
}

describe("wake-ups on BullMQ's PostgreSQL backend", () => {
  it('adds a few jobs one insert each and a large group in one bulk add; every job is delivered once', async () => {
    const queue = pgQueue();
    const delivered: string[] = [];
    const stop = await queue.process(
      async (job) => {
        delivered.push(job.invocationId);
      },
      { concurrency: 4 },
    );
    open[0]!.stop = stop;

    expect(await adds(() => queue.enqueue(jobs(1, 'one')))).toEqual({ single: 1, bulk: 0 });
    expect(await adds(() => queue.enqueue(jobs(3, 'three')))).toEqual({ single: 3, bulk: 0 });
    expect(await adds(() => queue.enqueue(jobs(12, 'twelve')))).toEqual({ single: 0, bulk: 1 });

    await waitFor(() => delivered.length >= 16, { timeoutMs: 30_000 });
    const expected = [...jobs(1, 'one'), ...jobs(3, 'three'), ...jobs(12, 'twelve')].map(
      (j) => j.invocationId,
    );
    expect([...delivered].sort()).toEqual([...expected].sort());
  });

  it('adds a delayed wake-up with its delay, one insert, and reports when it became due', async () => {
    const queue = pgQueue();
    const delivered: { id: string; at: number; readyAt?: number }[] = [];
    const stop = await queue.process(
      async (job, delivery) => {
        delivered.push({ id: job.invocationId, at: Date.now(), readyAt: delivery?.readyAt });
      },
      { concurrency: 1 },
    );
    open[0]!.stop = stop;
    const before = Date.now();
    expect(await adds(() => queue.enqueue(jobs(1, 'later'), { delayMs: 300 }))).toEqual({
      single: 1,
      bulk: 0,
    });
    await waitFor(() => delivered.length === 1, { timeoutMs: 30_000 });
    expect(delivered[0]?.id).toBe('later-0');
    // Delivered after its delay, and the queue wait it reports starts when the delay ended.
    expect(delivered[0]?.at).toBeGreaterThanOrEqual(before + 300);
    expect(delivered[0]?.readyAt).toBeGreaterThanOrEqual(before + 300);
  });

  it("runs the PostgreSQL-only mode's queue on connections that commit asynchronously, and the steps' durably", async () => {
    // The test server commits asynchronously everywhere (speed); this database is set back to PostgreSQL's default.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`alter database "${new URL(url).pathname.slice(1)}" set synchronous_commit = on`);
    await admin.end();
    const engine = await createEngine({
      apps: [],
      database: url,
      queue: { postgres: url, prefix: testQueuePrefix() },
      worker: false,
      logger: pino({ level: 'silent' }),
    });
    try {
      // The queue's own pool (private: nothing else exposes it), and the store's.
      const queuePool = (engine as unknown as { queue: { pool: { query(q: string): Promise<QueryResult> } } })
        .queue.pool;
      expect((await queuePool.query('show synchronous_commit')).rows[0]?.synchronous_commit).toBe('off');
      const store = await engine.store.db.execute(sql`show synchronous_commit`);
      expect((store as unknown as QueryResult).rows[0]?.synchronous_commit).toBe('on');
    } finally {
      await engine.close();
    }
  });

  it('replaces a producer whose add failed, and the pool keeps no listener of the ones dropped', async () => {
    // A server that is not there: every add fails, as while PostgreSQL restarts. BullMQ's PostgreSQL backend keeps
    // a producer's failed schema check for good, so each failed producer is dropped and the next add makes another.
    const pool = createResilientPool(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 2, {
      searchPath: BULLMQ_PG_SCHEMA,
    });
    const queue = new BullmqQueue({
      connection: { postgres: pool },
      prefix: testQueuePrefix(),
      leaseMs: 30_000,
    });
    // Skip the schema migration (it needs the server too): the adds are what fail here.
    (queue as unknown as { migrated: Promise<unknown> }).migrated = Promise.resolve();
    open.push({ queue });
    const baseline = pool.listenerCount('error');
    for (let i = 0; i < 5; i++) await expect(queue.enqueue(jobs(1, `down-${i}`))).rejects.toThrow();
    expect(pool.listenerCount('error')).toBe(baseline);
  });

  it('takes a StepQueue the caller built (createEngine({ queue })), and enqueues runs on it', async () => {
    const queue = pgQueue();
    const engine = await createEngine({
      apps: [{ name: 'noop', agent: new Say({ name: 'noop' }) }],
      database: url,
      queue,
      worker: false,
      logger: pino({ level: 'silent' }),
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'noop', userId: 'u', input: 'go' });
      // The run's job is on the queue of its definition: a consumer serving that definition receives it.
      const { definitionHash } = await engine.get(invocationId);
      const delivered: string[] = [];
      open[0]!.stop = await queue.process(
        async (job) => {
          delivered.push(job.invocationId);
        },
        { concurrency: 1, definitions: [definitionHash] },
      );
      await waitFor(() => delivered.includes(invocationId), { timeoutMs: 30_000 });
    } finally {
      await engine.close();
    }
  });

  it('migrates and adds once PostgreSQL is back, when first used while it was away', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'agentloom-pgq-'));
    chmodSync(dir, 0o755); // the postgres user reaches its data directory below this one
    const pool = createResilientPool(`postgres://postgres@127.0.0.1:${port}/postgres`, 3, {
      searchPath: BULLMQ_PG_SCHEMA,
    });
    const queue = new BullmqQueue({
      connection: { postgres: pool },
      prefix: testQueuePrefix(),
      leaseMs: 30_000,
    });
    let server: LocalServer | undefined;
    let stop: StopConsuming | undefined;
    try {
      // Nothing listens yet: BullMQ's schema cannot be checked or created, and the add fails.
      await expect(queue.enqueue(jobs(1, 'early'))).rejects.toThrow();
      server = await startLocalPostgres(join(dir, 'pg'), { port });
      await queue.enqueue(jobs(1, 'later'));
      const delivered: string[] = [];
      stop = await queue.process(
        async (job) => {
          delivered.push(job.invocationId);
        },
        { concurrency: 1 },
      );
      await waitFor(() => delivered.includes('later-0'), { timeoutMs: 30_000 });
    } finally {
      await stop?.();
      await queue.close();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Says hello. */
class Say extends BaseAgent {
  protected override async *runImpl() {
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'hello' }] } });
  }
}

type QueryResult = { rows: { synchronous_commit?: string }[] };
