/**
 * Group commit in the worker: requests of the same key that arrive together (in the same turn of the event loop)
 * or while that key's previous batch is being written go to the database as one statement — one commit for many
 * steps, as PostgreSQL's own group commit does for many connections. A request alone still goes at once (the next
 * turn of the event loop): batching adds no waiting.
 */
export class Batcher<K, I, O> {
  private readonly queues = new Map<K, { items: Pending<I, O>[]; busy: boolean }>();

  /** `write` answers each input of a batch at its index (or throws for the whole batch). */
  constructor(private readonly write: (key: K, inputs: I[]) => Promise<O[]>) {}

  submit(key: K, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let queue = this.queues.get(key);
      if (!queue) {
        queue = { items: [], busy: false };
        this.queues.set(key, queue);
      }
      queue.items.push({ input, resolve, reject });
      if (!queue.busy) {
        queue.busy = true;
        setImmediate(() => void this.drain(key));
      }
    });
  }

  private async drain(key: K): Promise<void> {
    const queue = this.queues.get(key);
    if (!queue) return;
    while (queue.items.length > 0) {
      const batch = queue.items.splice(0, queue.items.length);
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
    queue.busy = false;
    this.queues.delete(key);
  }
}

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (err: unknown) => void;
}
