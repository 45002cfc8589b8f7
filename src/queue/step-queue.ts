/** The StepQueue port: carries wake-ups of nodes. Postgres, not the queue, decides what must run. */
import * as z from 'zod';

/**
 * A job: run (or advance) one node. `wake` makes every wake-up a distinct, deterministic job id; `redelivery`
 * (absent on a first delivery) numbers the re-sends of one wake-up that the engine schedules itself (a step
 * stopped by a database error, a job left for a worker with another definition), so each has an id the queue
 * has not seen.
 */
export interface StepJob {
  invocationId: string;
  path: string;
  wake: number;
  redelivery?: number;
  /**
   * The definition hash the invocation was started with. A shared queue routes the job to workers that serve
   * that definition (during a rolling deploy, old and new workers each take only their own runs).
   */
  definition?: string;
  /**
   * What the process that enqueued the job already knew of its node (a workflow node it just created), so the
   * handler need not read it again. Kept only by the in-process queue and by jobs run here (LocalSlots): never
   * serialized, never trusted beyond a guarded write (a stale hint only costs the normal path).
   */
  hint?: object;
}

/** The schema of a job payload read back from a queue (data crossing a process boundary is validated). */
export const stepJobSchema = z.object({
  invocationId: z.string().min(1),
  path: z.string().min(1),
  wake: z.number().int().nonnegative(),
  redelivery: z.number().int().positive().optional(),
  definition: z.string().min(1).optional(),
});

/** The deterministic id of a job: enqueuing the same wake-up twice is harmless. */
export function jobId(job: StepJob): string {
  const base = `${job.invocationId}|${job.path}|${job.wake}`;
  return job.redelivery ? `${base}|r${job.redelivery}` : base;
}

/** Handles one job. A rejection means "deliver again later" (the queue owns crash-level retries). */
/** How the queue delivered a job. */
export interface Delivery {
  /** When the job became due (enqueued, or its delay ended), ms since the epoch: the queue wait ends now. */
  readyAt: number;
}

export type StepHandler = (job: StepJob, delivery?: Delivery) => Promise<void>;

/** Options of {@link StepQueue.process}. */
export interface ProcessOptions {
  concurrency: number;
  /** The definition hashes this worker serves (a shared queue delivers only their jobs). Default: all. */
  definitions?: readonly string[];
}

/** Options of {@link StepQueue.enqueue}. */
export interface EnqueueOptions {
  /** Deliver no earlier than this many ms from now. Default 0. */
  delayMs?: number;
}

/** Stops consuming: waits for running jobs unless `abrupt`, or at most `graceMs` when given. */
export type StopConsuming = (options?: { abrupt?: boolean }) => Promise<void>;

/**
 * Running jobs in this process, in slots of the concurrency it consumes the queue with: jobs of leaves this
 * process claimed as it created them (a fan-out's), and of workflow nodes it has just made runnable and knows as
 * written (a join). A shared queue runs them without writing them to its backend — the lease of a claimed leaf,
 * or the reconciler for a pending node, is their recovery — while the rest goes through the queue to every worker.
 */
export interface LocalSlots {
  /** How many more jobs of `definition` would start at once here now (0 when this process does not consume). */
  idle(definition?: string): number;
  /** Starts `jobs` here at once, in slots counted by {@link idle} (their hints are kept). */
  run(jobs: readonly StepJob[]): void;
}

/**
 * Jobs added by another statement: a queue kept in the store's own PostgreSQL database offers this, so that the
 * jobs an enqueue makes commit with the enqueue itself — one statement and one commit instead of a queue write
 * after the commit (a wake-up no crash between the two can lose, and one round trip fewer in a run's start).
 */
export interface JobsInStatement {
  /** Resolves once the queue's tables and functions exist (the statement calls them). */
  ready(): Promise<void>;
  /**
   * The SQL expression that adds one job from the jsonb value `j` (one element of {@link entries}) and returns its
   * id. Written by the queue, never from input: the statement embeds it as it is.
   */
  readonly addCall: string;
  /** One jsonb-ready value per job, for {@link addCall}'s `j`. */
  entries(jobs: readonly StepJob[]): Record<string, unknown>[];
}

/** A queue of step jobs. */
export interface StepQueue {
  /** Which adapter this is (logged, and shown by `status`). */
  readonly kind: 'local' | 'redis' | 'postgres';
  enqueue(jobs: readonly StepJob[], options?: EnqueueOptions): Promise<void>;
  /**
   * Slots of this process's concurrency, when it consumes the queue: a fan-out claims as many of its new leaves
   * for this process as there are idle slots, as it creates them, and runs them here (see {@link LocalSlots}).
   */
  readonly here?: LocalSlots;
  /** Present when another statement of the store may add jobs (see {@link JobsInStatement}). */
  readonly inStatement?: JobsInStatement;
  /** Starts consuming with `handler`; returns a function that stops consuming. */
  process(handler: StepHandler, options: ProcessOptions): Promise<StopConsuming>;
  /** Resolves when the queue's backend answers (readiness checks); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
