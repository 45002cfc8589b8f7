/**
 * The floors agentloom is measured against:
 *
 * - **physical floor**: one durable commit — an autocommit INSERT into a regular (WAL-logged) table, fsync and
 *   synchronous_commit on. W1: sequential commits on one connection (ms per commit); W2: 200 callers doing 5
 *   commits each over a pool of 20 connections (commits/s, group commit helping).
 * - **raw BullMQ chain**: each job enqueues the next (no database at all).
 * - **design floor**: the same chain plus one Postgres upsert per step (the step's durable checkpoint, committed
 *   before the next job is enqueued).
 *
 * The BullMQ floors run producer and worker in this process (concurrency 64, like agentloom's). W3 for them: 50
 * jobs that sleep 200 ms, each INCRementing a Redis counter when done; the one that brings it to 50 enqueues the
 * join job.
 */
import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BenchContext } from '../context.js';
import { repeat, sleep, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { createDatabase } from '../services.js';
import { measureWorkloads, W2_STEPS, W3_SLEEP_MS } from './workloads.js';

const SEQUENTIAL_COMMITS = 200;

/** The physical floor: one durable commit. */
export async function runCommitFloor(ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const url = await createDatabase(ctx.postgresUrl, 'floor_commit');
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query(
    'create table steps (id bigserial primary key, run text not null, step int not null, body text)',
  );
  const counters = await PgCounters.open(ctx.postgresUrl, 'floor_commit');
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  const insert = 'insert into steps (run, step, body) values ($1, $2, $3)';
  const result: SuiteResult = {
    suite: 'floor-commit',
    label: 'physical floor: one durable Postgres commit',
    kind: 'floor',
    figures: {},
    errors: [],
  };
  try {
    const sequential = async (): Promise<number> => {
      const run = randomBytes(4).toString('hex');
      const started = performance.now();
      for (let i = 0; i < SEQUENTIAL_COMMITS; i++) await setup.query(insert, [run, i, `step ${i}`]);
      return (performance.now() - started) / SEQUENTIAL_COMMITS;
    };
    const concurrent = async (): Promise<number> => {
      const started = performance.now();
      await Promise.all(
        Array.from({ length: scale.w2Invocations }, async (_, r) => {
          for (let i = 0; i < W2_STEPS; i++) await pool.query(insert, [`c${r}`, i, `step ${i}`]);
        }),
      );
      return (scale.w2Invocations * W2_STEPS) / ((performance.now() - started) / 1000);
    };
    await sequential();
    const window = await counters.begin();
    result.figures.w1 = await repeat(
      {
        warmup: 0,
        runs: scale.w1Runs,
        unit: 'ms/step',
        note: `${SEQUENTIAL_COMMITS} sequential autocommit INSERTs`,
      },
      sequential,
    );
    result.counts = { w1: await counters.end(window, scale.w1Runs * SEQUENTIAL_COMMITS) };
    result.figures.w2 = await repeat(
      {
        warmup: scale.warmup,
        runs: scale.runs,
        unit: 'steps/s',
        note: `${scale.w2Invocations} callers × 5 commits over 20 connections`,
      },
      concurrent,
    );
  } finally {
    await pool.end();
    await setup.end();
    await counters.close();
  }
  return result;
}

interface ChainJob {
  run: string;
  step: number;
  steps: number;
  kind: 'chain' | 'branch' | 'join';
}

/** A BullMQ chain in this process, with or without an upsert per step. */
class Chain {
  private readonly done = new Map<string, () => void>();
  private readonly queue: Queue<ChainJob>;
  private readonly worker: Worker<ChainJob>;
  private readonly redis: Redis;

  constructor(
    redisUrl: string,
    private readonly pool: pg.Pool | undefined,
  ) {
    const prefix = `f${randomBytes(4).toString('hex')}`;
    const connection = { url: redisUrl, maxRetriesPerRequest: null };
    this.redis = new Redis(redisUrl);
    this.queue = new Queue<ChainJob>('chain', {
      connection,
      prefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
    });
    this.worker = new Worker<ChainJob>('chain', (job) => this.handle(job), {
      connection,
      prefix,
      concurrency: 64,
    });
    this.worker.on('error', () => undefined);
  }

  private async checkpoint(job: ChainJob): Promise<void> {
    if (!this.pool) return;
    const key = job.kind === 'branch' ? `${job.run}/${job.step}` : job.run;
    await this.pool.query(
      `insert into checkpoints (run, step, state, updated_at) values ($1, $2, $3, now())
       on conflict (run) do update set step = excluded.step, state = excluded.state, updated_at = now()`,
      [key, job.step, JSON.stringify({ last: `step ${job.step}` })],
    );
  }

  private async handle(job: Job<ChainJob>): Promise<void> {
    const data = job.data;
    if (data.kind === 'branch') {
      await sleep(W3_SLEEP_MS);
      await this.checkpoint(data);
      const finished = await this.redis.incr(`fan:${data.run}`);
      if (finished === data.steps) await this.queue.add('join', { ...data, kind: 'join' });
      return;
    }
    await this.checkpoint(data);
    if (data.kind === 'chain' && data.step + 1 < data.steps) {
      await this.queue.add('step', { ...data, step: data.step + 1 });
      return;
    }
    this.done.get(data.run)?.();
    this.done.delete(data.run);
  }

  private finished(run: string): Promise<void> {
    return new Promise((resolve) => this.done.set(run, resolve));
  }

  /** Runs one chain of `steps` jobs. */
  async chain(steps: number): Promise<void> {
    const run = randomBytes(6).toString('hex');
    const finished = this.finished(run);
    await this.queue.add('step', { run, step: 0, steps, kind: 'chain' });
    await finished;
  }

  /** Runs `branches` sleeping jobs, then a join job. */
  async fan(branches: number): Promise<void> {
    const run = randomBytes(6).toString('hex');
    const finished = this.finished(run);
    await this.queue.addBulk(
      Array.from({ length: branches }, (_, i) => ({
        name: 'branch',
        data: { run, step: i, steps: branches, kind: 'branch' as const },
      })),
    );
    await finished;
    await this.redis.del(`fan:${run}`);
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    this.redis.disconnect();
  }
}

/** The raw BullMQ chain (`upsert: false`) or the design floor (`upsert: true`). */
export async function runBullmqFloor(ctx: BenchContext, upsert: boolean): Promise<SuiteResult> {
  const { scale } = ctx;
  let pool: pg.Pool | undefined;
  let counters: PgCounters | undefined;
  if (upsert) {
    const url = await createDatabase(ctx.postgresUrl, 'floor_upsert');
    pool = new pg.Pool({ connectionString: url, max: 20 });
    await pool.query(
      'create table checkpoints (run text primary key, step int not null, state jsonb not null, updated_at timestamptz not null)',
    );
    counters = await PgCounters.open(ctx.postgresUrl, 'floor_upsert');
  }
  const chain = new Chain(ctx.redisUrl, pool);
  try {
    return await measureWorkloads(
      scale,
      {
        suite: upsert ? 'floor-bullmq-upsert' : 'floor-bullmq',
        label: upsert
          ? 'design floor: BullMQ + one Postgres upsert per step'
          : 'raw BullMQ chain (no database)',
        kind: 'floor',
      },
      {
        sequence: (steps) => chain.chain(steps),
        fanOut: (branches) => chain.fan(branches),
        notes: {
          w1: 'a chain of 20 jobs',
          w2: `${scale.w2Invocations} concurrent chains of 5 jobs, concurrency 64`,
          w3: '50 jobs of 200 ms, then a join job',
        },
      },
      counters,
    );
  } finally {
    await chain.close();
    await pool?.end();
    await counters?.close();
  }
}
