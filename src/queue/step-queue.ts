/** The StepQueue port: carries wake-ups of nodes. Postgres, not the queue, decides what must run. */

/** A job: run (or advance) one node. `wake` makes every wake-up a distinct, deterministic job id. */
export interface StepJob {
  invocationId: string;
  path: string;
  wake: number;
}

/** The deterministic id of a job: enqueuing the same wake-up twice is harmless. */
export function jobId(job: StepJob): string {
  return `${job.invocationId}|${job.path}|${job.wake}`;
}

/** Handles one job. A rejection means "deliver again later" (the queue owns crash-level retries). */
export type StepHandler = (job: StepJob) => Promise<void>;

/** Options of {@link StepQueue.process}. */
export interface ProcessOptions {
  concurrency: number;
}

/** A queue of step jobs. */
export interface StepQueue {
  enqueue(jobs: readonly StepJob[]): Promise<void>;
  /** Starts consuming with `handler`; returns a function that stops consuming (waits for running jobs unless `abrupt`). */
  process(
    handler: StepHandler,
    options: ProcessOptions,
  ): Promise<(options?: { abrupt?: boolean }) => Promise<void>>;
  close(): Promise<void>;
}
