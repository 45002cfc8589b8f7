/** The Bus over Redis pub/sub (distributed mode): one publishing and one subscribing connection per process. */
import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import type { Bus, BusTopic } from '../core/bus.js';

/** Options of {@link RedisBus}. */
export interface RedisBusOptions {
  url: string;
  /** Namespace of the channels (as the queue's). Default 'agentloom'. */
  prefix?: string;
  onError?: (err: unknown) => void;
}

/** A Bus on Redis pub/sub. Subscriptions are restored by ioredis after a reconnect. */
export class RedisBus implements Bus {
  readonly kind = 'redis';
  private readonly pub: Redis;
  private sub: Redis | undefined;
  private readonly local = new EventEmitter();
  private readonly subscribed = new Map<string, Promise<unknown>>();

  constructor(private readonly options: RedisBusOptions) {
    this.local.setMaxListeners(0);
    // Best effort: a message that cannot be sent while Redis is away is dropped, never queued behind an outage.
    this.pub = new Redis(options.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
    this.pub.on('error', (err) => options.onError?.(err));
  }

  private channel(topic: BusTopic): string {
    return `${this.options.prefix ?? 'agentloom'}:bus:${topic}`;
  }

  async publish(topic: BusTopic, message: string): Promise<void> {
    await this.pub.publish(this.channel(topic), message);
  }

  async subscribe(topic: BusTopic, onMessage: (message: string) => void): Promise<() => void> {
    if (!this.sub) {
      this.sub = new Redis(this.options.url, { maxRetriesPerRequest: null });
      this.sub.on('error', (err) => this.options.onError?.(err));
      this.sub.on('message', (channel: string, message: string) => this.local.emit(channel, message));
    }
    const channel = this.channel(topic);
    let ready = this.subscribed.get(channel);
    if (!ready) {
      ready = this.sub.subscribe(channel);
      this.subscribed.set(channel, ready);
    }
    await ready;
    this.local.on(channel, onMessage);
    return () => this.local.off(channel, onMessage);
  }

  async close(): Promise<void> {
    this.local.removeAllListeners();
    this.sub?.disconnect();
    this.pub.disconnect();
  }
}
