/**
 * The in-process StepQueue of embedded engines: FIFO, bounded concurrency, deduplicated by job id while a job
 * waits, and redelivery with backoff when a handler fails (as BullMQ does for a stalled or failed job).
 */
import {
  jobId,
  type EnqueueOptions,
  type LocalSlots,
  type ProcessOptions,
  type StepHandler,
  type StepJob,
  type StepQueue,
  type StopConsuming,
} from './step-queue.js';

/** Options of {@link InProcessQueue}. */
export interface InProcessQueueOptions {
  /** Redeliveries of a failing job before it is dropped (the reconciler will find its node). Default 5. */
  maxDeliveries?: number;
  /** First redelivery delay; doubles each time. Default 50 ms. */
  retryDelayMs?: number;
  /** Called when a handler fails. */
  onError?: (err: unknown, job: StepJob) => void;
}

interface Entry {
  job: StepJob;
  deliveries: number;
}

/** A StepQueue inside one process. */
export class InProcessQueue implements StepQueue {
  readonly kind = 'local';
  private readonly waiting: Entry[] = [];
  private readonly waitingIds = new Set<string>();
  /** When each waiting entry became due (its queue wait starts). */
  private readonly readyAt = new WeakMap<Entry, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private handler: StepHandler | undefined;
  private concurrency = 0;
  private active = 0;
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly options: InProcessQueueOptions = {}) {}

  async enqueue(jobs: readonly StepJob[], options: EnqueueOptions = {}): Promise<void> {
    if (options.delayMs && options.delayMs > 0) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        for (const job of jobs) this.push({ job, deliveries: 0 });
        this.pump();
      }, options.delayMs);
      this.timers.add(timer);
      return;
    }
    for (const job of jobs) this.push({ job, deliveries: 0 });
    this.pump();
  }

  /** Every job of this queue runs in this process: a job run here is one enqueued. */
  readonly here: LocalSlots = {
    idle: () =>
      !this.handler || this.stopped ? 0 : Math.max(0, this.concurrency - this.active - this.waiting.length),
    run: (jobs) => void this.enqueue(jobs),
  };

  async ping(): Promise<void> {
    if (this.stopped) throw new Error('the in-process queue is closed');
  }

  private push(entry: Entry): void {
    if (this.stopped) return;
    const id = jobId(entry.job);
    if (this.waitingIds.has(id)) return;
    this.waitingIds.add(id);
    this.waiting.push(entry);
    this.readyAt.set(entry, Date.now());
  }

  async process(handler: StepHandler, options: ProcessOptions): Promise<StopConsuming> {
    this.handler = handler;
    this.concurrency = Math.max(1, options.concurrency);
    this.pump();
    return async ({ abrupt = false } = {}) => {
      this.stopped = true;
      this.handler = undefined;
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
      if (!abrupt) await Promise.allSettled([...this.running]);
    };
  }

  private pump(): void {
    while (this.handler && !this.stopped && this.active < this.concurrency && this.waiting.length > 0) {
      const entry = this.waiting.shift() as Entry;
      const readyAt = this.readyAt.get(entry) ?? Date.now();
      this.readyAt.delete(entry);
      this.waitingIds.delete(jobId(entry.job));
      this.active++;
      const run = this.deliver(this.handler, entry, readyAt).finally(() => {
        this.active--;
        this.running.delete(run);
        this.pump();
      });
      this.running.add(run);
    }
  }

  private async deliver(handler: StepHandler, entry: Entry, readyAt: number): Promise<void> {
    try {
      await handler(entry.job, { readyAt });
    } catch (err) {
      if (this.stopped) return;
      this.options.onError?.(err, entry.job);
      const deliveries = entry.deliveries + 1;
      if (deliveries >= (this.options.maxDeliveries ?? 5)) return;
      const delay = (this.options.retryDelayMs ?? 50) * 2 ** (deliveries - 1);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.push({ job: entry.job, deliveries });
        this.pump();
      }, delay);
      this.timers.add(timer);
    }
  }

  /** Jobs waiting or running (for tests and metrics). */
  get size(): number {
    return this.waiting.length + this.active;
  }

  async close(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.waiting.length = 0;
    this.waitingIds.clear();
  }
}
