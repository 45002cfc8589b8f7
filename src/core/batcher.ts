/**
 * Group commit in the worker: requests of the same key that arrive together (in the same turn of the event loop)
 * or while that key's previous batches are being written go to the database together — one commit for many
 * steps, as PostgreSQL's own group commit does for many connections. A request alone still goes at once (the next
 * turn of the event loop): batching adds no waiting.
 */
export class Batcher<K, I, O> {
  private readonly queues = new Map<K, { items: Pending<I, O>[]; active: number; scheduled: boolean }>();
  private readonly concurrency: number;
  private readonly maxBatch: number;

  /**
   * `write` answers each input of a batch at its index (or throws for the whole batch). At most `concurrency`
   * batches of one key are written at a time (default 1), each of at most `maxBatch` requests (default unbounded).
   */
  constructor(
    private readonly write: (key: K, inputs: I[]) => Promise<O[]>,
    options: { concurrency?: number; maxBatch?: number } = {},
  ) {
    this.concurrency = options.concurrency ?? 1;
    this.maxBatch = options.maxBatch ?? Number.POSITIVE_INFINITY;
  }

  submit(key: K, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let queue = this.queues.get(key);
      if (!queue) {
        queue = { items: [], active: 0, scheduled: false };
        this.queues.set(key, queue);
      }
      queue.items.push({ input, resolve, reject });
      if (queue.active < this.concurrency && !queue.scheduled) {
        queue.scheduled = true;
        setImmediate(() => this.drain(key));
      }
    });
  }

  private drain(key: K): void {
    const queue = this.queues.get(key);
    if (!queue) return;
    queue.scheduled = false;
    while (queue.items.length > 0 && queue.active < this.concurrency) {
      const batch = queue.items.splice(0, Math.min(queue.items.length, this.maxBatch));
      queue.active++;
      void this.flush(key, batch).finally(() => {
        queue.active--;
        if (queue.items.length > 0) this.drain(key);
        else if (queue.active === 0 && !queue.scheduled) this.queues.delete(key);
      });
    }
  }

  private async flush(key: K, batch: Pending<I, O>[]): Promise<void> {
    try {
      const outputs = await this.write(
        key,
        batch.map((p) => p.input),
      );
      batch.forEach((p, i) => p.resolve(outputs[i] as O));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (err: unknown) => void;
}
