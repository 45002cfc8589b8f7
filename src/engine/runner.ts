/**
 * Runner: the ADK-style façade over an embedded engine (PGlite in memory by default, in-process queue).
 * `run` enqueues one invocation and yields its events until it completes, pauses or fails.
 */
import type { BaseAgent } from '../agents/base-agent.js';
import type { Content } from '../core/content.js';
import type { Event } from '../core/event.js';
import type { Model } from '../models/model.js';
import type { Tool } from '../tools/tool.js';
import { createEngine } from './create-engine.js';
import type { Engine } from './engine.js';

/** Options of {@link Runner.create}. */
export interface RunnerOptions {
  appName: string;
  agent: BaseAgent;
  /** Default: PGlite in memory. */
  database?: string | { pglite: string };
  models?: Record<string, Model>;
  tools?: Record<string, Tool>;
}

/** In-process runner of one app. */
export class Runner {
  private constructor(
    readonly engine: Engine,
    readonly appName: string,
  ) {}

  static async create(options: RunnerOptions): Promise<Runner> {
    const engine = await createEngine({
      apps: [{ name: options.appName, agent: options.agent }],
      database: options.database ?? { pglite: 'memory' },
      models: options.models,
      tools: options.tools,
    });
    return new Runner(engine, options.appName);
  }

  /** Runs one invocation; yields its stored events until it is completed, paused, failed or cancelled. */
  async *run(input: {
    userId: string;
    sessionId?: string;
    newMessage: string | Content;
    stateDelta?: Record<string, unknown>;
  }): AsyncGenerator<Event> {
    const { invocationId } = await this.engine.enqueue({
      app: this.appName,
      userId: input.userId,
      sessionId: input.sessionId,
      input: input.newMessage,
      stateDelta: input.stateDelta,
    });
    yield* this.engine.events(invocationId, { follow: true });
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
