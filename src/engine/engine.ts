/**
 * The engine: the one code path of every mode. It talks to a Store (PostgreSQL or PGlite) and a StepQueue
 * (in-process or BullMQ) and never branches on which. `createEngine` wires them (CONTRACT.md "engine").
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Bus } from '../core/bus.js';
import { AgentloomError } from '../core/errors.js';
import type { Event } from '../core/event.js';
import { newId } from '../core/ids.js';
import type { StepQueue, StopConsuming } from '../queue/step-queue.js';
import { getInvocation, type InvocationRow } from '../store/repos/invocations.js';
import { reconcileNodes, type NodeJobRef } from '../store/repos/nodes.js';
import type { Store } from '../store/store.js';
import { cancelTx, outsideStopsOf, retryTx, type OutsideStops, type RetryOptions } from './runs/control.js';
import type { EngineOptions, EngineParts } from './engine-options.js';
import { enqueueInvocation, type Enqueued, type EnqueueInput } from './runs/enqueue.js';
import { SettleWatch } from './runs/follow/settle-watch.js';
import { everyInterval } from '../core/periodic.js';
import { followEvents, waitForSettled } from './runs/follow/follow.js';
import { observeSteps } from './observe/observer.js';
import { traceSteps, type RunTracing } from './observe/run-trace.js';
import {
  invocationViewFromNotice,
  readInvocation,
  readNodes,
  readSession,
  requireInvocation,
  type SessionView,
} from './runs/read-views.js';
import { assertSameDefinition, toolsetsOf, type RegisteredApp } from './apps/registry.js';
import { RunHooks } from './observe/run-hooks.js';
import { budgetStopOf } from './runs/budget-answers.js';
import { parseStopMessage, PartialFeed, stopMessage, type StopReason } from './bus-messages.js';
import { answerTx, definitionsOf, type FunctionResponseInput } from './runs/resume.js';
import {
  callbackAnswer,
  redeemAuthAnswer,
  redirectRefusal,
  type AuthAnswerDeps,
} from './runs/auth-answers.js';
import { findToolRequest } from '../store/repos/tool-requests.js';
import type { CredentialVault } from './auth/credential-vault.js';
import { Scheduler } from './step/scheduler.js';
import { schedulerDeps } from './scheduler-deps.js';
import type { InvocationView, NodeView } from './runs/views.js';
import {
  pruneRuns,
  resolveRetention,
  startRetention,
  type PruneCounts,
  type PruneOptions,
  type Retention,
} from './runs/retention.js';
import { notify } from './observe/observer.js';
import { forkInvocation, forksOf, type ForkListing, type ForkOptions } from './runs/fork.js';
import { diffRuns, type RunDiff } from './runs/diff.js';
import { replayInvocation, type ReplayOptions, type ReplayResult } from './runs/replay.js';

/** A control message on the bus: stop the running steps of an invocation. */

/** A running agentloom engine. */
export class Engine {
  readonly store: Store;
  readonly apps: ReadonlyMap<string, RegisteredApp>;
  readonly logger: Logger;
  private readonly vault: CredentialVault | undefined;
  private readonly authDeps: AuthAnswerDeps;
  private readonly queue: StepQueue;
  private readonly bus: Bus;
  private readonly scheduler: Scheduler;
  private stopWorker: StopConsuming | undefined;
  private unsubscribeControl: (() => void) | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  /** Closes the rate limiter's own connection (Redis), when it has one. */
  private readonly closeRateLimiter: (() => Promise<void>) | undefined;
  private readonly retention: Retention | undefined;
  private stopRetention: (() => void) | undefined;
  private closed = false;
  /** Partial events received from the bus, by invocation id (never stored). */
  private readonly partials: PartialFeed;
  /** Invocations enqueued here and not settled yet, known without a read (see `wait`). */
  private readonly settles: SettleWatch;
  private readonly leaseMs: number;
  private readonly tracing: RunTracing | undefined;
  /** After-commit work: a run's end (its trace, afterRunCallback), stored events (onEventCallback). */
  private readonly runHooks: RunHooks;

  constructor(
    parts: EngineParts,
    private readonly options: Omit<EngineOptions, 'apps'>,
  ) {
    this.store = parts.store;
    this.vault = parts.vault;
    this.authDeps = {
      db: parts.store.db,
      vault: parts.vault,
      auths: parts.auths,
      fault: async (point, info) => options.faults?.(point, info),
    };
    this.queue = parts.queue;
    this.bus = parts.bus;
    this.apps = parts.apps;
    this.logger = parts.logger;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.retention = options.retention === undefined ? undefined : resolveRetention(options.retention);
    this.tracing = parts.tracing;
    const { plugins, logger, tracing } = parts;
    const apps = () => [...this.apps.keys()];
    this.runHooks = new RunHooks({
      db: parts.store.db,
      logger,
      tracing,
      plugins,
      apps,
      fault: options.faults,
    });
    this.settles = new SettleWatch(this.store);
    this.partials = new PartialFeed(this.bus);
    this.closeRateLimiter = parts.rateLimiter?.close;
    this.scheduler = new Scheduler(
      schedulerDeps(parts, options, {
        owner: `${hostname()}:${process.pid}:${newId().slice(0, 8)}`,
        leaseMs: this.leaseMs,
        publishPartial: (event) => {
          this.bus
            .publish('partial', JSON.stringify(event))
            .catch((err: unknown) => this.logger.debug({ err }, 'partial event not published'));
        },
        onInvocationEnded: (invocationId) => this.stopSteps(invocationId, 'ended'),
        runHooks: this.runHooks,
      }),
    );
  }

  /** The queue adapter this engine uses ('local', 'redis' or 'postgres'). */
  get queueKind(): StepQueue['kind'] {
    return this.queue.kind;
  }

  /** Resolves when the queue's backend answers (readiness checks: the API's `/readyz`); rejects otherwise. */
  pingQueue(): Promise<void> {
    return this.queue.ping();
  }

  /** Starts consuming step jobs in this process, and the reconciler. */
  async startWorker(options: { concurrency?: number } = {}): Promise<{ stop: () => Promise<void> }> {
    if (this.stopWorker) return { stop: () => this.stopWorkerNow() };
    // Cancellation and endInvocation from any process reach the steps running here.
    this.unsubscribeControl = await this.bus.subscribe('control', (message) => {
      const stop = parseStopMessage(message);
      if (stop) this.scheduler.abort(stop.invocationId, stop.error);
    });
    const handler = observeSteps(
      traceSteps((job) => this.scheduler.handle(job), this.tracing),
      this.options.observer,
      this.logger,
    );
    this.stopWorker = await this.queue.process(handler, {
      concurrency: options.concurrency ?? 64,
      definitions: [...this.apps.values()].map((app) => app.definitionHash),
    });
    const interval = this.options.reconcileIntervalMs ?? Math.min(5_000, Math.floor(this.leaseMs / 2));
    if (interval > 0) {
      this.reconcileTimer = everyInterval(
        interval,
        () => this.reconcile(),
        (err) => this.logger.warn({ err }, 'reconcile failed'),
      );
    }
    if (this.retention) {
      const onPrune = this.options.observer?.onPrune?.bind(this.options.observer);
      this.stopRetention = startRetention(this.store.db, this.retention, this.logger, (counts) =>
        notify(onPrune, counts, this.logger),
      ).stop;
    }
    return { stop: () => this.stopWorkerNow() };
  }

  private async stopWorkerNow(abrupt = false): Promise<void> {
    clearInterval(this.reconcileTimer);
    this.stopRetention?.();
    const stop = this.stopWorker;
    this.stopWorker = undefined;
    if (abrupt) this.scheduler.abortAll();
    await stop?.({ abrupt });
    this.unsubscribeControl?.();
  }

  /**
   * Graceful shutdown (SIGTERM): takes no new jobs, lets running steps finish for up to `graceMs`, then stops
   * the rest and releases their leases so another worker takes them over at once. Resolves when no step runs.
   */
  async drain(options: { graceMs: number }): Promise<{ released: number }> {
    clearInterval(this.reconcileTimer);
    this.stopRetention?.();
    const stop = this.stopWorker;
    this.stopWorker = undefined;
    if (!stop) return { released: 0 };
    const stopping = stop({ abrupt: false });
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace-over'>((resolve) => {
      timer = setTimeout(() => resolve('grace-over'), options.graceMs);
    });
    const first = await Promise.race([stopping.then(() => 'stopped' as const), graceOver]);
    clearTimeout(timer);
    let released = 0;
    if (first === 'grace-over') {
      released = this.scheduler.runningSteps;
      this.scheduler.releaseAll();
      await stopping;
    }
    this.unsubscribeControl?.();
    return { released };
  }

  /**
   * One reconciler pass (ARCHITECTURE "Failure model"): re-wakes nodes that must run but show no sign of it
   * (lost wake-ups, dead workers). Only one process's pass runs at a time (an advisory lock). Returns how many
   * nodes it re-woke.
   */
  async reconcile(options: { staleMs?: number } = {}): Promise<number> {
    const staleMs = options.staleMs ?? this.options.reconcileStaleMs ?? this.leaseMs;
    const { jobs } = await reconcileNodes(this.store.db, { staleMs });
    // Run ends whose process died between its commit and handling them (their trace, afterRunCallback).
    await this.runHooks.sweep();
    if (jobs.length === 0) return 0;
    this.logger.info({ nodes: jobs.length }, 'reconciler re-woke nodes');
    await this.queue.enqueue(jobs);
    return jobs.length;
  }

  /**
   * Deletes ended runs (never a queued, running or paused one) that ended longer ago than `olderThan`, with
   * their events, nodes and answered requests; a session goes with its last run. `dryRun` counts instead.
   */
  prune(options: PruneOptions): Promise<PruneCounts> {
    return pruneRuns(this.store.db, options);
  }

  /** Tells every process to stop the running steps of an invocation (after the commit that ended it). */
  private stopSteps(invocationId: string, reason: StopReason): void {
    this.scheduler.abort(invocationId);
    this.bus
      .publish('control', stopMessage(invocationId, reason))
      .catch((err: unknown) =>
        this.logger.warn(
          { err, invocationId },
          'stop message not sent; other workers will find the node ended',
        ),
      );
  }

  /** Enqueues wake-ups after a commit; a failure is logged (the reconciler re-wakes), never thrown. */
  private async wake(jobs: NodeJobRef[], definition: string): Promise<void> {
    if (jobs.length === 0) return;
    try {
      await this.queue.enqueue(jobs.map((job) => ({ ...job, definition })));
    } catch (err) {
      this.logger.warn({ err, jobs: jobs.length }, 'enqueue failed; the reconciler will wake these nodes');
    }
  }

  /**
   * Enqueues an invocation: stores the user event, the invocation and its first node (the root agent, or in an
   * existing session the agent that took the conversation over — see `startAt`), then wakes that node.
   */
  enqueue(input: EnqueueInput): Promise<Enqueued> {
    return enqueueInvocation(
      {
        store: this.store,
        apps: this.apps,
        defaultMaxLlmCalls: this.options.maxLlmCalls ?? 500,
        wake: (jobs, definition) => this.wake(jobs, definition),
        rootAtEnqueue: this.queue.kind !== 'local',
        ...(this.queue.inStatement ? { jobsInStatement: this.queue.inStatement } : {}),
        settles: this.settles,
        plugins: this.runHooks.plugins,
      },
      input,
    );
  }

  /** The invocation with its pending calls (CONTRACT.md `engine.get`). */
  get(invocationId: string): Promise<InvocationView> {
    return readInvocation(this.store.db, invocationId);
  }

  /** The invocation's nodes (the checkpoint table): path, agent, status, checkpoint, attempt. */
  nodes(invocationId: string): Promise<NodeView[]> {
    return readNodes(this.store.db, invocationId);
  }

  /** Resolves when the invocation is completed, paused, failed or cancelled (TIMEOUT after `timeoutMs`). */
  wait(invocationId: string, options: { timeoutMs?: number } = {}): Promise<InvocationView> {
    return waitForSettled(
      this.store,
      { read: () => this.get(invocationId), fromNotice: invocationViewFromNotice },
      invocationId,
      options.timeoutMs,
      this.settles,
    );
  }

  /**
   * The invocation's events in seq order; with `follow`, keeps yielding new ones until it settles, and with
   * `partial` also the streamed partial events of steps running in this process (never stored).
   */
  async *events(
    invocationId: string,
    options: { afterSeq?: number; follow?: boolean; partial?: boolean } = {},
  ): AsyncGenerator<Event> {
    const inv = await requireInvocation(this.store.db, invocationId);
    if (options.follow && options.partial) await this.partials.subscribe();
    yield* followEvents({
      store: this.store,
      partials: this.partials.events,
      invocationId,
      sessionId: inv.sessionId,
      status: async () => (await requireInvocation(this.store.db, invocationId)).status,
      ...options,
    });
  }

  /** Answers paused calls; each answer resumes its node. */
  async respond(input: {
    invocationId?: string;
    functionResponses: FunctionResponseInput[];
    by?: string;
  }): Promise<void> {
    if (!Array.isArray(input?.functionResponses) || input.functionResponses.length === 0) {
      throw new AgentloomError('VALIDATION', 'functionResponses must be a non-empty list of {id, response}', {
        details: { field: 'functionResponses' },
      });
    }
    const stopped: string[] = [];
    for (const response of input.functionResponses) {
      // An OAuth2 callback URL: its code is redeemed first (an HTTP call, outside the answer's transaction).
      const credential = await redeemAuthAnswer(this.authDeps, response, input.invocationId);
      // A budget pause answered "stop" cancels its run as engine.cancel does: the remote work of paused nodes is
      // stopped before the cancel commits, that of running nodes after.
      const stopping = await budgetStopOf(this.store.db, response, input.invocationId, (inv) =>
        this.outsideStops(inv),
      );
      await stopping?.beforeCommit();
      const groups = await this.store.transaction(async (tx) => {
        const answered = await answerTx(tx, response, {
          invocationId: input.invocationId,
          by: input.by,
          vault: this.vault,
          credential,
          hooks: this.runHooks,
        });
        // Refuse (rolling the answer back) when this engine would resume the invocation on a changed tree.
        assertSameDefinition(this.apps, await getInvocation(tx, answered.invocationId));
        if (answered.stopped) stopped.push(answered.invocationId);
        // An answer may resume other runs too (one consent, every call waiting for that credential).
        return definitionsOf(tx, answered.jobs);
      });
      // A budget pause answered "stop" cancelled its run: its end is handled and its other running steps stop now.
      await this.runHooks.afterCommit();
      for (const id of stopped.splice(0)) {
        this.stopSteps(id, 'cancelled');
        await stopping?.afterCommit();
      }
      if (credential)
        await this.authDeps.fault('after-credential-stored', { invocationId: '', path: '', attempt: 0 });
      for (const [definition, jobs] of groups) await this.wake(jobs, definition);
    }
  }

  /**
   * Completes an `auth` pause from an OAuth2 provider's redirect (`GET /v1/auth/callback?state&code`): the state
   * names the pending call; a state not issued here, or naming a call already answered, is refused (400).
   */
  async completeAuthorization(query: URLSearchParams): Promise<{ invocationId: string }> {
    const { invocationId, response } = callbackAnswer(this.vault, query);
    const request = await findToolRequest(this.store.db, response.id, invocationId);
    if (!request || request.kind !== 'auth' || request.status !== 'pending') {
      throw new AgentloomError(
        'VALIDATION',
        'this authorization was already used, or its call no longer waits for it',
        {
          details: { field: 'state' },
        },
      );
    }
    // A malformed redirect (no code, the provider's error, a parameter twice) leaves the call waiting for its link.
    const malformed = redirectRefusal(query);
    if (malformed) throw malformed;
    await this.respond({ invocationId, functionResponses: [response], by: 'oauth2 callback' });
    return { invocationId };
  }

  /** Confirms or rejects a tool call awaiting confirmation. */
  async confirm(
    callId: string,
    answer: { confirmed: boolean; payload?: unknown; by?: string; invocationId?: string },
  ): Promise<void> {
    const response: Record<string, unknown> = { confirmed: answer.confirmed };
    if (answer.payload !== undefined) response.payload = answer.payload;
    await this.respond({
      invocationId: answer.invocationId,
      functionResponses: [{ id: callId, response }],
      by: answer.by,
    });
  }

  /** Cancels an invocation: unfinished nodes are cancelled and in-flight calls see their signal abort. */
  async cancel(invocationId: string): Promise<InvocationView> {
    const inv = await requireInvocation(this.store.db, invocationId);
    const stops = await this.outsideStops(inv);
    // Paused nodes first (no step would stop their remote tasks); crash after → our run is not cancelled yet.
    await stops.beforeCommit();
    await this.options.faults?.('before-cancel-commit', { invocationId, path: '', attempt: 0 });
    const cancelled = await this.store.transaction((tx) => cancelTx(tx, invocationId, this.runHooks));
    await this.runHooks.afterCommit();
    if (cancelled) {
      this.stopSteps(invocationId, 'cancelled');
      await stops.afterCommit();
    }
    return this.get(invocationId);
  }

  private outsideStops(inv: InvocationRow): Promise<OutsideStops> {
    return outsideStopsOf(this.store.db, this.apps.get(inv.app), inv, (err, nodePath) =>
      this.logger.warn(
        { err, invocationId: inv.id, nodePath },
        'could not stop the work of a cancelled node',
      ),
    );
  }

  /** Runs a failed or cancelled invocation again from its checkpoints. */
  async retry(invocationId: string, options: RetryOptions = {}): Promise<InvocationView> {
    const inv = await requireInvocation(this.store.db, invocationId);
    assertSameDefinition(this.apps, inv);
    const jobs = await this.store.transaction((tx) => retryTx(tx, invocationId, options));
    await this.wake(jobs, inv.definitionHash);
    return this.get(invocationId);
  }

  /**
   * Forks a run at the node `options.at`: a new invocation in a new session with the history up to `at` copied
   * (no model or tool call) and run live from `at` with the state patch, instruction overrides or input applied.
   */
  fork(invocationId: string, options: ForkOptions): Promise<{ invocationId: string; sessionId: string }> {
    return forkInvocation(
      { store: this.store, apps: this.apps, wake: (jobs, definition) => this.wake(jobs, definition) },
      invocationId,
      options,
    );
  }

  /**
   * Replays a recorded run on the current code with every model and tool answer taken from the recording (no call
   * leaves the process); resolves with the first divergence (node path, both sides), if any.
   */
  replay(invocationId: string, options: ReplayOptions = {}): Promise<ReplayResult> {
    return replayInvocation(
      {
        store: this.store,
        apps: this.apps,
        wake: (jobs, definition) => this.wake(jobs, definition),
        wait: (id, timeoutMs) => this.wait(id, { timeoutMs }),
      },
      invocationId,
      options,
    );
  }

  /** Two runs compared node by node, aligned by node path, with the first divergence. */
  async diff(a: string, b: string): Promise<RunDiff> {
    return diffRuns(this.store.db, a, b);
  }

  /** The forks of an invocation, oldest first. */
  forks(invocationId: string): Promise<ForkListing[]> {
    return forksOf(this.store.db, invocationId);
  }

  /** A session with its state and events. */
  getSession(sessionId: string): Promise<SessionView> {
    return readSession(this.store.db, sessionId);
  }

  /** Stops the worker (waiting for running steps unless `abrupt`) and closes the store and queue. */
  async close(options: { abrupt?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stopWorkerNow(options.abrupt ?? false);
    // MCP connections and stdio servers' processes: after the steps that used them stopped.
    await Promise.all(toolsetsOf(this.apps.values()).map((toolset) => toolset.close()));
    await this.queue.close();
    await this.bus.close();
    await this.closeRateLimiter?.();
    await this.settles.close();
    await this.store.close();
  }
}
