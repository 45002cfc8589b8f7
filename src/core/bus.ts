/**
 * The Bus port: small, best-effort messages between the processes of one deployment (cancellation of a running
 * step, streamed partial events). Never a source of truth: a lost message costs latency, not correctness
 * (a cancelled step still finds its node cancelled at its next fenced write or lease renewal).
 */
import { EventEmitter } from 'node:events';

/** The topics the engine uses. */
export type BusTopic = 'control' | 'partial';

/** A publish/subscribe channel shared by every process of a deployment. */
export interface Bus {
  /** Which adapter this is. */
  readonly kind: 'memory' | 'redis' | 'postgres';
  /** Sends `message` to every subscriber of `topic` in every process (this one included). */
  publish(topic: BusTopic, message: string): Promise<void>;
  /** Resolves once subscribed (a message published after it resolves is delivered). Returns the unsubscribe. */
  subscribe(topic: BusTopic, onMessage: (message: string) => void): Promise<() => void>;
  close(): Promise<void>;
}

/** A Bus inside one process (embedded engines). */
export class InProcessBus implements Bus {
  readonly kind = 'memory';
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  async publish(topic: BusTopic, message: string): Promise<void> {
    this.emitter.emit(topic, message);
  }

  async subscribe(topic: BusTopic, onMessage: (message: string) => void): Promise<() => void> {
    this.emitter.on(topic, onMessage);
    return () => this.emitter.off(topic, onMessage);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
