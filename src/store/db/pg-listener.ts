/**
 * The one LISTEN connection of a PostgreSQL database, kept alive: when it drops (a server restart, a failover, a
 * network cut) it reconnects with capped exponential backoff, LISTENs again on every channel that has handlers,
 * and then calls every reconnect hook, because a notification sent while it was disconnected is lost for good.
 */
import pg from 'pg';

/** Options of {@link PgListener}. */
export interface PgListenerOptions {
  /** First delay before reconnecting; doubles on each failed try. Default 100 ms. */
  minBackoffMs?: number;
  /** Largest delay between tries. Default 5 000 ms. */
  maxBackoffMs?: number;
  /** Told about each lost connection and failed reconnect (the listener itself never throws them). */
  onError?: (err: unknown) => void;
}

interface Channel {
  handlers: Set<(payload: string) => void>;
  reconnectHooks: Set<() => void>;
  /** Settles once LISTEN was issued for the channel on the current connection. */
  ready: Promise<void>;
}

/** A self-healing LISTEN connection, shared by every subscriber of a database. */
export class PgListener {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly channels = new Map<string, Channel>();
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private closed = false;
  private connectedBefore = false;

  constructor(
    private readonly url: string,
    private readonly options: PgListenerOptions = {},
  ) {
    this.backoffMs = options.minBackoffMs ?? 100;
  }

  /**
   * Calls `onPayload` for each notification on `channel`, and `onReconnect` after the connection was lost and
   * restored (re-read whatever the notifications stand for). Resolves once LISTEN is active; rejects when the
   * database cannot be reached now. Returns the unsubscribe function.
   */
  async listen(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the database is closed');
    const client = await this.connect();
    let entry = this.channels.get(channel);
    if (!entry) {
      entry = { handlers: new Set(), reconnectHooks: new Set(), ready: listenOn(client, channel) };
      this.channels.set(channel, entry);
    }
    // Registered before LISTEN settles, so a reconnect in between re-LISTENs this channel too.
    const subscribed = entry;
    subscribed.handlers.add(onPayload);
    if (onReconnect) subscribed.reconnectHooks.add(onReconnect);
    const unsubscribe = async (): Promise<void> => {
      subscribed.handlers.delete(onPayload);
      if (onReconnect) subscribed.reconnectHooks.delete(onReconnect);
    };
    try {
      await subscribed.ready;
    } catch (err) {
      await unsubscribe();
      // A failed LISTEN must not stay cached: the next subscriber tries again.
      if (subscribed.handlers.size === 0 && this.channels.get(channel) === subscribed) {
        this.channels.delete(channel);
      }
      throw err;
    }
    return unsubscribe;
  }

  /** Stops listening for good: closes the connection and cancels any pending reconnect. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The live connection, or a new one (LISTENing on every known channel before it is handed out). */
  private connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<pg.Client> {
    // keepAlive: a connection cut without a FIN (a dead host) is noticed by TCP instead of never.
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    client.on('notification', (msg) => {
      for (const handler of this.channels.get(msg.channel)?.handlers ?? []) handler(msg.payload ?? '');
    });
    // 'error' and then 'end' both follow a lost connection; `lost` acts once per client.
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    try {
      await client.connect();
      for (const [channel, entry] of this.channels) {
        // Nobody listens here any more: forget the channel instead of LISTENing for no one.
        if (entry.handlers.size === 0) this.channels.delete(channel);
        else await listenOn(client, channel);
      }
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      throw new Error('the database is closed');
    }
    this.client = client;
    this.backoffMs = this.options.minBackoffMs ?? 100;
    // Any connection after the first replaces one that was lost, with whatever was notified meanwhile.
    if (this.connectedBefore) this.resync();
    this.connectedBefore = true;
    return client;
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (err !== undefined) this.options.onError?.(err);
    // LISTENs issued on the dead connection are gone; the new connection issues them all again.
    for (const entry of this.channels.values()) entry.ready = Promise.resolve();
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.reconnect().catch(() => undefined);
    }, this.backoffMs);
    // A process with nothing else to do need not stay up just to re-listen.
    this.timer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.closed || this.client) return;
    try {
      await this.connect();
    } catch (err) {
      this.options.onError?.(err);
      this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 5_000);
      this.scheduleReconnect();
    }
  }

  private resync(): void {
    for (const entry of this.channels.values()) {
      for (const hook of entry.reconnectHooks) {
        try {
          hook();
        } catch (err) {
          this.options.onError?.(err);
        }
      }
    }
  }
}

function listenOn(client: pg.Client, channel: string): Promise<void> {
  return client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).then(() => undefined);
}
