/**
 * What happens after a commit, never inside a transaction that may still roll back: a run's end (its node spans,
 * the plugins' afterRunCallback) and each stored event (onEventCallback); and a run's start (beforeRunCallback).
 *
 * A run's end is handled by exactly one process: the one that claims it in the store (`run_end_handled_at`, see
 * store/repos/invocations.ts `claimRunEnd`). The process that ended the run claims it right after its commit; when
 * that process died first, a worker's sweep (the reconciler's tick) claims it. The claim commits before the hooks
 * run, so a crash between the two loses them: at most once, never twice.
 */
import type { Logger } from 'pino';
import type { Event } from '../../core/event.js';
import type { Content } from '../../core/content.js';
import type { PluginInvocationContext, RunOutcome } from '../../plugins/base-plugin.js';
import type { PluginManager } from '../../plugins/plugin-manager.js';
import type { Db } from '../../store/db/database.js';
import { claimRunEnd, unhandledRunEnds, type InvocationRow } from '../../store/repos/invocations.js';
import type { RunTracing } from './run-trace.js';

/** What the hooks need. */
export interface RunHooksDeps {
  db: Db;
  logger: Logger;
  tracing: RunTracing | undefined;
  plugins: PluginManager | undefined;
  /** The apps this engine serves: it handles the ends of their runs only (it has their plugins). */
  apps: () => readonly string[];
  /** Named crash points for durability tests (`createEngine({ faults })`). */
  fault?: (point: string, info: { invocationId: string; path: string; attempt: number }) => unknown;
}

/** The run a plugin's run-level callback is about. */
export function invocationContextOf(inv: {
  id: string;
  app: string;
  userId: string;
  sessionId: string;
  rootAgent?: string;
}): PluginInvocationContext {
  return {
    invocationId: inv.id,
    appName: inv.app,
    userId: inv.userId,
    sessionId: inv.sessionId,
    rootAgent: inv.rootAgent ?? '',
  };
}

/** An engine's after-commit hooks. */
export class RunHooks {
  /** Runs whose end a transaction of this process wrote, to handle after its commit (see {@link noteEnded}). */
  private readonly noted = new Set<string>();

  /** Whether a run's end has anything to do here (tracing, or a plugin's afterRunCallback). */
  readonly handlesRunEnds: boolean;
  /** Whether a plugin wants to see stored events. */
  readonly handlesEvents: boolean;

  constructor(private readonly deps: RunHooksDeps) {
    this.handlesRunEnds = deps.tracing !== undefined || (deps.plugins?.has('afterRunCallback') ?? false);
    this.handlesEvents = deps.plugins?.has('onEventCallback') ?? false;
  }

  /** The plugins (for the steps: beforeRunCallback, the agents' pipeline). */
  get plugins(): PluginManager | undefined {
    return this.deps.plugins;
  }

  /**
   * Called inside a transaction that ends run `invocationId`: it is handled by {@link afterCommit}. Nothing happens if
   * that transaction rolls back (the claim then finds no end to handle).
   */
  noteEnded(invocationId: string): void {
    if (this.handlesRunEnds) this.noted.add(invocationId);
  }

  /** After a commit: handles the run ends noted so far (a run another transaction still writes waits for its lock). */
  async afterCommit(): Promise<void> {
    if (this.noted.size === 0) return;
    const ids = [...this.noted];
    this.noted.clear();
    for (const id of ids) await this.ended(id);
  }

  /**
   * Handles the end of run `invocationId` if it ended and nobody handled that end yet: its node spans, then every
   * plugin's afterRunCallback. A plugin that throws is logged (the run has ended: nothing is left to fail).
   */
  async ended(invocationId: string): Promise<void> {
    if (!this.handlesRunEnds) return;
    // Crash here → the run has ended and nobody claimed it: a worker's sweep handles it.
    await this.deps.fault?.('before-run-end-claim', { invocationId, path: '', attempt: 0 });
    const inv = await claimRunEnd(this.deps.db, invocationId, this.deps.apps());
    if (!inv) return;
    const outcome = outcomeOf(inv);
    try {
      await this.deps.tracing?.runEnded(this.deps.db, inv, { status: outcome.status, error: inv.error });
    } catch (err) {
      this.deps.logger.warn({ err, invocationId }, 'run end not traced');
    }
    try {
      await this.deps.plugins?.run('afterRunCallback', {
        invocationContext: invocationContextOf(inv),
        outcome,
      });
    } catch (err) {
      this.deps.logger.error({ err, invocationId }, 'afterRunCallback failed');
    }
  }

  /**
   * Handles the ends no process handled (it died between its commit and its claim), up to `limit`; a worker calls
   * it on its reconciler's tick. Returns how many it found.
   */
  async sweep(limit = 100): Promise<number> {
    if (!this.handlesRunEnds) return 0;
    const ids = await unhandledRunEnds(this.deps.db, this.deps.apps(), limit);
    for (const id of ids) await this.ended(id);
    return ids.length;
  }

  /**
   * After the commit of `events` of run `inv`: each plugin's onEventCallback, once per event, in the committing
   * process. A throw fails the step it ran in (PLUGIN_ERROR); the events stay stored and are not shown again.
   */
  async eventsStored(
    inv: { id: string; app: string; userId: string; sessionId: string; rootAgent?: string },
    events: readonly Event[],
  ): Promise<void> {
    const plugins = this.deps.plugins;
    if (!plugins || !this.handlesEvents) return;
    const invocationContext = invocationContextOf(inv);
    for (const event of events) await plugins.run('onEventCallback', { invocationContext, event });
  }

  /** The plugins' answer to a run's first step (beforeRunCallback), if any. */
  async beforeRun(inv: InvocationRow): Promise<Content | undefined> {
    return this.deps.plugins?.run('beforeRunCallback', { invocationContext: invocationContextOf(inv) });
  }
}

function outcomeOf(inv: InvocationRow): RunOutcome {
  const status = inv.status === 'completed' || inv.status === 'failed' ? inv.status : 'cancelled';
  return {
    status,
    output: inv.output,
    error: (inv.error as RunOutcome['error']) ?? null,
  };
}
