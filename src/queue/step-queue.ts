/** The StepQueue port: carries wake-ups of nodes. Postgres, not the queue, decides what must run. */
import { z } from 'zod';

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
   * handler need not read it again. Kept only by the in-process queue: never serialized, never trusted beyond
   * a guarded write (a stale hint only costs the normal path).
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

/** A queue of step jobs. */
export interface StepQueue {
  /** Which adapter this is (logged, and shown by `status`). */
  readonly kind: 'local' | 'redis' | 'postgres';
  enqueue(jobs: readonly StepJob[], options?: EnqueueOptions): Promise<void>;
  /**
   * How many more jobs would start at once if enqueued now. Only a queue inside this process answers (its jobs
   * can run nowhere else): a fan-out then claims that many of its new leaves for this process as it creates them.
   */
  idleSlots?(): number;
  /** Starts consuming with `handler`; returns a function that stops consuming. */
  process(handler: StepHandler, options: ProcessOptions): Promise<StopConsuming>;
  /** Resolves when the queue's backend answers (readiness checks); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
