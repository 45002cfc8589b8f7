/**
 * The BullMQ StepQueue, on Redis or on BullMQ's PostgreSQL backend. BullMQ only carries wake-ups: Postgres
 * decides what runs (a job whose node is not claimable is a no-op), so BullMQ's own retries are off, finished
 * jobs are removed at once, and its stalled-job recovery merely re-delivers a wake-up. A job BullMQ gives up on
 * cannot strand a node: the reconciler finds every node that must run from Postgres alone.
 */
import {
  createPostgresBackend,
  DEFAULT_SCHEMA,
  Queue,
  runMigrations,
  Worker,
  withBackend,
  type Job,
  type PgPool,
} from 'bullmq';
import { Redis } from 'ioredis';
import type { EventEmitter } from 'node:events';
import { AgentloomError } from '../core/errors.js';
import {
  jobId,
  stepJobSchema,
  type EnqueueOptions,
  type JobsInStatement,
  type LocalSlots,
  type ProcessOptions,
  type StepHandler,
  type StepJob,
  type StepQueue,
  type StopConsuming,
} from './step-queue.js';

/** The schema BullMQ's PostgreSQL backend keeps its tables and functions in: a pool for it searches there. */
export const BULLMQ_PG_SCHEMA: string = DEFAULT_SCHEMA;

/**
 * Where the queue lives: Redis, or PostgreSQL through a pool the queue then owns (closes). Pass a pool that
 * survives a server restart (the store's `createResilientPool`, with `searchPath: BULLMQ_PG_SCHEMA`): BullMQ's own
 * pools leave checked-out clients without an 'error' listener, and a restart would crash the process.
 */
export type BullmqConnection = { redis: string } | { postgres: PgPool };

/** Options of {@link BullmqQueue}. */
export interface BullmqQueueOptions {
  connection: BullmqConnection;
  /** Namespace of the queue, so deployments (and test files) can share one server. Default 'agentloom'. */
  prefix?: string;
  /**
   * The step lease (ms). BullMQ's job lock is set a little longer, so that when a worker dies BullMQ re-delivers
   * its job only after the node's lease has lapsed and the new delivery can claim it.
   */
  leaseMs: number;
  /** Re-deliveries of a wake-up whose handler failed (a database outage) before leaving it to the reconciler. Default 8. */
  maxDeliveries?: number;
  /** First re-delivery delay; doubles each time up to 10 s. Default 250 ms. */
  retryDelayMs?: number;
  /** Failures of handlers and of the connection (logged by the engine; never thrown into a timer). */
  onError?: (err: unknown, job?: StepJob) => void;
  /**
   * On PostgreSQL: the queue's database is the store's, so the store's statements may add jobs in their own
   * transaction ({@link BullmqQueue.inStatement}). Set by `createEngine` when both URLs name one database.
   */
  jobsInStoreStatements?: boolean;
}

const JOB_NAME = 'step';

/**
 * One job's add on BullMQ's PostgreSQL backend, from a jsonb `j` of {@link BullmqQueue.inStatement}'s entries:
 * `add_job`, the function BullMQ's own producer calls (its portable SQL interface), with the arguments that
 * producer passes for a job of ours (no priority, no delay, no parent, no deduplication, FIFO). It takes the
 * producers' shared lock and sends the workers' NOTIFY, delivered at the caller's commit.
 */
const ADD_JOB_CALL =
  `"${DEFAULT_SCHEMA}".add_job(j->>'queue', j->>'id', j->>'name', j->'data', j->'opts', 0, 0::bigint, ` +
  `(j->>'timestamp')::bigint, 1, null, null, null, null, null, false)`;

/**
 * On BullMQ's PostgreSQL backend, `addBulk` creates two temporary tables per call (catalog writes: ~26 KB of WAL,
 * 3 ms for a single job on an idle server, 11 ms under 200 concurrent enqueues), while `add` is one insert
 * (0.5 ms). Measured here: N adds at once beat one bulk add up to 8–9 jobs (2.7 vs 3.2 ms at 8; 6.8 vs 4.0 at 16),
 * so smaller groups are added one by one, concurrently; on Redis `addBulk` is one pipeline and always wins.
 */
const PG_BULK_FROM = 10;

/**
 * The length BullMQ trims each queue's event stream (`bull:<queue>:events`, read only by a `QueueEvents` or a
 * dashboard; agentloom reads nothing from it) to, approximately. BullMQ's default, 10 000, is ~1.4 MB of Redis per
 * queue that a quiet queue takes an hour or more to fill: the soak saw Redis grow for 45 minutes.
 */
export const EVENTS_MAX_LEN = 1_000;

/**
 * One queue this process consumes: its BullMQ worker, and the steps it runs, delivered by BullMQ (`active`) or
 * started here by {@link LocalSlots.run} (`lent`: slots lent out of the worker's concurrency, which is lowered
 * meanwhile so that both together never exceed it).
 */
interface Consumer {
  /** Set once started. */
  worker?: Worker;
  handler: StepHandler;
  concurrency: number;
  active: number;
  lent: number;
  /** The jobs run here, awaited by a graceful stop. */
  running: Set<Promise<void>>;
  stopped: boolean;
}

/** A StepQueue over BullMQ. */
export class BullmqQueue implements StepQueue {
  readonly kind: 'redis' | 'postgres';
  /** Producers by queue name: one BullMQ queue per definition hash (see {@link StepJob.definition}). */
  private readonly queues = new Map<string, Queue>();
  private readonly redis: Redis | undefined;
  private readonly pool: PgPool | undefined;
  private migrated: Promise<unknown> | undefined;
  /** The 'error' listeners each PostgreSQL producer's connection added to the pool. */
  private readonly poolListeners = new Map<Queue, ((...args: unknown[]) => void)[]>();
  /** The pool as the event emitter it is (BullMQ's `PgPool` type leaves that out). */
  private readonly poolEvents: EventEmitter | undefined;
  /** The queues this process consumes, by queue name. */
  private readonly consumers = new Map<string, Consumer>();

  /**
   * A fan-out's leaves claimed by this process as it created them run here, in slots of the concurrency of the
   * queue of their definition, without a trip through the backend; the rest of the fan-out is enqueued.
   */
  readonly here: LocalSlots = {
    idle: (definition) => {
      const consumer = this.consumers.get(this.queueName(definition));
      if (!consumer || consumer.stopped) return 0;
      return Math.max(0, consumer.concurrency - consumer.active - consumer.lent);
    },
    run: (jobs) => {
      for (const job of jobs) this.runHere(job);
    },
  };

  readonly inStatement?: JobsInStatement;

  constructor(private readonly options: BullmqQueueOptions) {
    if ('redis' in options.connection) {
      this.kind = 'redis';
      // Producers fail fast while Redis is away (the commit that made a node runnable already happened, and the
      // reconciler re-wakes it); waiting on an offline queue would hold the step that enqueues.
      this.redis = new Redis(options.connection.redis, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
      });
      this.redis.on('error', (err) => this.options.onError?.(err));
    } else {
      this.kind = 'postgres';
      this.pool = options.connection.postgres;
      // Every BullMQ queue and worker on the pool adds an 'error' listener to it (one per definition served, and
      // per definition enqueued to): many are expected, none is a leak.
      this.poolEvents = this.pool as unknown as EventEmitter;
      this.poolEvents.setMaxListeners(0);
      if (options.jobsInStoreStatements) {
        this.inStatement = {
          ready: () => this.ready(),
          addCall: ADD_JOB_CALL,
          entries: (jobs) =>
            jobs.map((job) => {
              const { name, data, opts } = this.entry(job, {});
              return {
                queue: this.queueName(job.definition),
                id: opts.jobId,
                name,
                data,
                opts,
                timestamp: Date.now(),
              };
            }),
        };
      }
    }
  }

  /** Creates or upgrades BullMQ's own schema (`bullmq`) once, under BullMQ's migration lock. */
  private async ready(): Promise<void> {
    if (!this.pool) return;
    // A failure is not kept: a process that first needs the queue while PostgreSQL restarts tries again next time.
    this.migrated ??= runMigrations(this.pool, BULLMQ_PG_SCHEMA).catch((err: unknown) => {
      this.migrated = undefined;
      throw err;
    });
    await this.migrated;
  }

  /**
   * The BullMQ queue of a definition. Routing by definition is what makes rolling deploys work: a worker consumes
   * only the queues of the definitions it serves, so a run is never offered to a worker that cannot run it.
   */
  private queueName(definition: string | undefined): string {
    const base = `${this.options.prefix ?? 'agentloom'}-steps`;
    return definition ? `${base}-${definition}` : base;
  }

  private producer(definition: string | undefined): Queue {
    const name = this.queueName(definition);
    let queue = this.queues.get(name);
    if (!queue) {
      if (this.redis) {
        queue = new Queue(name, { connection: this.redis, streams: { events: { maxLen: EVENTS_MAX_LEN } } });
      } else {
        const pool = this.pool as PgPool;
        const { Queue: PgQueue } = withBackend(createPostgresBackend);
        const events = this.poolEvents as EventEmitter;
        const before = new Set(events.listeners('error'));
        queue = new PgQueue(name, { connection: pool }) as unknown as Queue;
        // Its connection listens for the pool's errors and never stops (close included): remembered, so that a
        // dropped producer's listener goes with it.
        this.poolListeners.set(
          queue,
          events.listeners('error').filter((l) => !before.has(l)) as ((...args: unknown[]) => void)[],
        );
      }
      queue.on('error', (err) => this.options.onError?.(err));
      this.queues.set(name, queue);
    }
    return queue;
  }

  async enqueue(jobs: readonly StepJob[], options: EnqueueOptions = {}): Promise<void> {
    const byDefinition = new Map<string | undefined, StepJob[]>();
    for (const job of jobs) {
      const list = byDefinition.get(job.definition);
      if (list) list.push(job);
      else byDefinition.set(job.definition, [job]);
    }
    await Promise.all([...byDefinition].map(([definition, group]) => this.add(definition, group, options)));
  }

  private async add(
    definition: string | undefined,
    jobs: readonly StepJob[],
    options: EnqueueOptions,
  ): Promise<void> {
    await this.ready();
    const queue = this.producer(definition);
    try {
      await this.addTo(queue, jobs, options);
    } catch (err) {
      // BullMQ's PostgreSQL backend checks a queue's schema once and keeps the outcome, a failure too: a producer
      // first used while the server restarts would fail every add for good. One whose add failed is dropped; the
      // next add makes a fresh one (the Redis backend's connection recovers by itself).
      if (this.kind === 'postgres') this.dropProducer(this.queueName(definition), queue);
      throw err;
    }
  }

  private dropProducer(name: string, queue: Queue): void {
    if (this.queues.get(name) !== queue) return;
    this.queues.delete(name);
    for (const listener of this.poolListeners.get(queue) ?? []) {
      this.poolEvents?.removeListener('error', listener);
    }
    this.poolListeners.delete(queue);
    void queue.close().catch(() => undefined);
  }

  /** A job as BullMQ adds it: its name, its data and its options. */
  private entry(job: StepJob, options: EnqueueOptions) {
    return {
      name: JOB_NAME,
      // Only the job's identity crosses the process boundary (an in-process hint does not).
      data: {
        invocationId: job.invocationId,
        path: job.path,
        wake: job.wake,
        ...(job.redelivery === undefined ? {} : { redelivery: job.redelivery }),
        ...(job.definition === undefined ? {} : { definition: job.definition }),
      },
      opts: {
        jobId: jobId(job),
        attempts: 1,
        removeOnComplete: true,
        removeOnFail: true,
        ...(options.delayMs && options.delayMs > 0 ? { delay: Math.round(options.delayMs) } : {}),
      },
    };
  }

  private async addTo(queue: Queue, jobs: readonly StepJob[], options: EnqueueOptions): Promise<void> {
    const entries = jobs.map((job) => this.entry(job, options));
    if (this.kind === 'postgres' && entries.length < PG_BULK_FROM) {
      await Promise.all(entries.map((e) => queue.add(e.name, e.data, e.opts)));
    } else await queue.addBulk(entries);
  }

  /**
   * Consumes the queues of `options.definitions` (and the untagged queue), each with `options.concurrency`
   * steps at once, so a fan-out of one run never waits in waves behind another definition's work.
   */
  async process(handler: StepHandler, options: ProcessOptions): Promise<StopConsuming> {
    await this.ready();
    const names = [undefined, ...(options.definitions ?? [])].map((d) => this.queueName(d));
    const concurrency = Math.max(1, options.concurrency);
    const consumers = names.map((name) => {
      const consumer: Consumer = {
        handler,
        concurrency,
        active: 0,
        lent: 0,
        running: new Set(),
        stopped: false,
      };
      consumer.worker = this.startWorker(name, concurrency, (job) => this.deliver(consumer, job));
      this.consumers.set(name, consumer);
      return [name, consumer] as const;
    });
    return async ({ abrupt = false } = {}) => {
      for (const [name, consumer] of consumers) {
        consumer.stopped = true;
        if (this.consumers.get(name) === consumer) this.consumers.delete(name);
      }
      await Promise.all(
        consumers.map(async ([, consumer]) => {
          await consumer.worker?.close(abrupt);
          if (!abrupt) await Promise.allSettled([...consumer.running]);
        }),
      );
    };
  }

  private startWorker(name: string, concurrency: number, processor: (job: Job) => Promise<void>): Worker {
    const workerOptions = {
      concurrency,
      // Longer than the lease: when a worker dies, BullMQ re-delivers its job after the node's lease has lapsed,
      // so the new delivery can claim the node.
      lockDuration: this.options.leaseMs + 1_000,
      stalledInterval: Math.max(500, Math.floor(this.options.leaseMs / 2)),
      // A stalled job is only a wake-up: re-deliver it however often its workers die; never fail it.
      maxStalledCount: 1_000_000,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    };
    let worker: Worker;
    if (this.kind === 'redis') {
      const connection = new Redis((this.options.connection as { redis: string }).redis, {
        maxRetriesPerRequest: null,
      });
      connection.on('error', (err) => this.options.onError?.(err));
      worker = new Worker(name, processor, { ...workerOptions, connection });
      worker.on('closed', () => connection.disconnect());
    } else {
      const { Worker: PgWorker } = withBackend(createPostgresBackend);
      worker = new PgWorker(name, processor, {
        ...workerOptions,
        connection: this.pool as PgPool,
      }) as unknown as Worker;
    }
    worker.on('error', (err) => this.options.onError?.(err));
    return worker;
  }

  /** Runs one delivery of BullMQ's. */
  private async deliver(consumer: Consumer, job: Job): Promise<void> {
    const parsed = stepJobSchema.safeParse(job.data);
    if (!parsed.success) {
      this.options.onError?.(
        new AgentloomError('VALIDATION', `dropped a malformed step job ${job.id}: ${parsed.error.message}`),
      );
      return;
    }
    consumer.active++;
    try {
      // BullMQ's PostgreSQL backend reads `delay` back as 0 from a job added with `add`; its opts keep it.
      await this.runStep(consumer.handler, parsed.data, job.timestamp + (job.delay || job.opts.delay || 0));
    } finally {
      consumer.active--;
    }
  }

  /**
   * Runs a job in this process in a slot lent out of its queue's concurrency (the BullMQ worker takes one job
   * less meanwhile). A process that no longer consumes that queue enqueues it instead.
   */
  private runHere(job: StepJob): void {
    const consumer = this.consumers.get(this.queueName(job.definition));
    if (!consumer || consumer.stopped) {
      void this.enqueue([job]).catch((err: unknown) => this.options.onError?.(err, job));
      return;
    }
    const lend = (by: number) => {
      consumer.lent += by;
      if (consumer.worker) consumer.worker.concurrency = Math.max(1, consumer.concurrency - consumer.lent);
    };
    lend(1);
    const run = this.runStep(consumer.handler, job, Date.now()).finally(() => {
      lend(-1);
      consumer.running.delete(run);
    });
    consumer.running.add(run);
  }

  /** Runs a step's handler; a failing one is re-delivered later under a new job id (BullMQ retries are off). */
  private async runStep(handler: StepHandler, step: StepJob, readyAt: number): Promise<void> {
    try {
      await handler(step, { readyAt });
    } catch (err) {
      this.options.onError?.(err, step);
      const redelivery = (step.redelivery ?? 0) + 1;
      if (redelivery > (this.options.maxDeliveries ?? 8)) return; // the reconciler takes it from here
      const delayMs = Math.min(10_000, (this.options.retryDelayMs ?? 250) * 2 ** (redelivery - 1));
      await this.enqueue([{ ...step, redelivery }], { delayMs }).catch((enqueueErr: unknown) =>
        this.options.onError?.(enqueueErr, step),
      );
    }
  }

  async ping(): Promise<void> {
    if (this.redis) {
      await this.redis.ping();
      return;
    }
    await this.ready();
    await this.producer(undefined).getJobCounts('waiting');
  }

  async close(): Promise<void> {
    const consumers = [...this.consumers.values()];
    this.consumers.clear();
    for (const consumer of consumers) consumer.stopped = true;
    await Promise.allSettled(consumers.map((c) => c.worker?.close(true)));
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    this.redis?.disconnect();
    await this.pool?.end().catch(() => undefined);
  }
}
