/**
 * The Bus over Postgres LISTEN/NOTIFY: the cross-process channel of deployments without Redis (Postgres-only,
 * or PostgreSQL with an in-process queue). One channel per topic; messages over NOTIFY's payload limit are
 * dropped (the Bus is best effort: partial events are never stored and cancellation is also fenced).
 */
import { sql } from 'drizzle-orm';
import type { Bus, BusTopic } from '../core/bus.js';
import type { Store } from './store.js';

/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_PAYLOAD_BYTES = 7_900;

/** A Bus on the store's database. */
export class NotifyBus implements Bus {
  readonly kind = 'postgres';

  constructor(
    private readonly store: Store,
    private readonly options: { prefix?: string; onDropped?: (topic: BusTopic, bytes: number) => void } = {},
  ) {}

  private channel(topic: BusTopic): string {
    return `${this.options.prefix ?? 'agentloom'}_bus_${topic}`.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 63);
  }

  async publish(topic: BusTopic, message: string): Promise<void> {
    const bytes = Buffer.byteLength(message);
    if (bytes > MAX_PAYLOAD_BYTES) {
      this.options.onDropped?.(topic, bytes);
      return;
    }
    await this.store.db.execute(sql`select pg_notify(${this.channel(topic)}, ${message})`);
  }

  async subscribe(topic: BusTopic, onMessage: (message: string) => void): Promise<() => void> {
    const unlisten = await this.store.listen(this.channel(topic), onMessage);
    return () => void unlisten();
  }

  async close(): Promise<void> {
    // The LISTEN connection belongs to the store, which closes it.
  }
}
