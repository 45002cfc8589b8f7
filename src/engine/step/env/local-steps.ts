/**
 * The steps this process runs now: tracked from before their claim to their end, stopped through their abort
 * controllers (cancel, close, shutdown). Holds no database or queue: it only knows this process.
 */
import { AgentloomError } from '../../../core/errors.js';

/** Why this process stopped one of its steps early (the reason given to its AbortController). */
export const SHUTDOWN = 'SHUTDOWN';

/** A step in this process: stopped through its controller; `done` settles when it ends. */
export interface LocalStep {
  invocationId: string;
  controller: AbortController;
  done: Promise<void>;
}

/** A step tracked by {@link LocalSteps.track}: `finish` must be called when it ends. */
export type TrackedStep = LocalStep & { finish: () => void };

const stepKey = (invocationId: string, path: string) => `${invocationId}|${path}`;

/** The steps running in this process, by `invocationId|path`. */
export class LocalSteps {
  private readonly running = new Map<string, LocalStep>();
  /** Claims carried by job hints that a delivery already used (a redelivery claims again). */
  readonly usedClaims = new WeakSet<object>();
  private shuttingDown = false;

  /** Set at shutdown: no new continuation is claimed, no carried claim is used. */
  get stopping(): boolean {
    return this.shuttingDown;
  }

  /** The step of this process running the node, if any. */
  get(invocationId: string, path: string): LocalStep | undefined {
    return this.running.get(stepKey(invocationId, path));
  }

  /** Registers a step of this process; `finish` must be called when it ends. */
  track(invocationId: string, path: string): TrackedStep {
    const key = stepKey(invocationId, path);
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const step = { invocationId, controller: new AbortController(), done };
    this.running.set(key, step);
    return {
      ...step,
      finish: () => {
        if (this.running.get(key) === step) this.running.delete(key);
        finish();
      },
    };
  }

  /** Aborts the in-flight steps of an invocation in this process (model and tool calls see `signal`). */
  abort(invocationId: string, reason: unknown): void {
    for (const step of this.running.values()) {
      if (step.invocationId === invocationId) step.controller.abort(reason);
    }
  }

  /** Aborts every in-flight step (abrupt close). */
  abortAll(): void {
    for (const step of this.running.values()) {
      // `engineClosed`: the run goes on elsewhere, so a remote agent's task is not cancelled with the step.
      const reason = new AgentloomError('CANCELLED', 'the engine was closed', {
        details: { engineClosed: true },
      });
      step.controller.abort(reason);
    }
  }

  /** Stops every in-flight step with {@link SHUTDOWN}: each releases its lease (see leaf-run.ts). */
  releaseAll(): void {
    this.shuttingDown = true;
    for (const step of this.running.values()) step.controller.abort(SHUTDOWN);
  }

  /** How many steps this process is running. */
  get size(): number {
    return this.running.size;
  }
}
