/**
 * The engine: the one code path of every mode. It talks to a Store (PostgreSQL or PGlite) and a StepQueue
 * (in-process or BullMQ) and never branches on which. `createEngine` wires them (CONTRACT.md "engine").
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Bus } from '../core/bus.js';
import { userText, type Content } from '../core/content.js';
import { AgentloomError } from '../core/errors.js';
import type { Event } from '../core/event.js';
import { newId } from '../core/ids.js';
import type { Model } from '../models/model.js';
import { Gemini } from '../models/gemini.js';
import type { StepQueue, StopConsuming } from '../queue/step-queue.js';
import { appendEventTx, listEvents, prepareEvent } from '../store/events.js';
import { getInvocation, insertInvocationTx, type InvocationRow } from '../store/invocations.js';
import {
  insertNodeTx,
  invocationNodes,
  reconcileNodes,
  type NodeJobRef,
  type NodeRow,
} from '../store/nodes.js';
import { createSessionTx, getSession } from '../store/sessions.js';
import { applyToState, assertPlainObject, touches } from '../store/state.js';
import { insertInvocationInNewSession } from '../store/new-session-invocation.js';
import { eventInsertOf } from '../store/step-rows.js';
import type { Store } from '../store/store.js';
import { invocationWithPending } from '../store/tool-requests.js';
import type { Tool } from '../tools/tool.js';
import { cancelTx, retryTx } from './control.js';
import type { AppDefinition, RegisteredApp } from './registry.js';
import { answerTx, type FunctionResponseInput } from './resume.js';
import { nodeKind, Scheduler, type JobHint } from './scheduler.js';
import { WorkflowAgent } from '../agents/workflow.js';
import { followEvents, waitForSettled } from './follow.js';
import { agentToContinue, type StartAt } from './start-agent.js';
import {
  notify,
  observeModel,
  observeModels,
  observeSteps,
  observeTool,
  observeTools,
  type EngineObserver,
  type StepRun,
} from './observer.js';
import { invocationView, type InvocationView, type NodeView } from './views.js';

/** Where the queue lives: in this process, BullMQ on Redis, or BullMQ on PostgreSQL (CONTRACT.md `queue`). */
export type QueueOption =
  'local' | { redis: string; prefix?: string } | { postgres: string; prefix?: string } | StepQueue;

/** Options of {@link createEngine}. */
export interface EngineOptions {
  /** Apps in code, or the path of a module exporting `apps` (and optionally `tools`, `models`). */
  apps: AppDefinition[] | string;
  /** Default: $DATABASE_URL, else PGlite on disk under `.agentloom/data`. */
  database?: string | { pglite: string };
  /**
   * Default: `{ redis: $REDIS_URL }` when REDIS_URL is set and the database is PostgreSQL, else 'local'
   * (a PGlite database belongs to one process, so a shared queue would add nothing).
   */
  queue?: QueueOption;
  logger?: Logger;
  tools?: Record<string, Tool>;
  models?: Record<string, Model>;
  /** Gemini API key for models named by a Gemini id. Default: $GEMINI_API_KEY / $GOOGLE_API_KEY. */
  geminiApiKey?: string;
  /**
   * Run steps in this process (default true, concurrency 64). `false`: a producer/reader only (an API process):
   * no worker and no reconciler.
   */
  worker?: boolean | { concurrency?: number };
  /** Lease of a running step; a step whose worker died is taken over after this. Default 15 000 ms. */
  leaseMs?: number;
  /** Default step deadline (an agent's `maxStepMs` overrides it). Default 600 000 ms (10 minutes). */
  maxStepMs?: number;
  /** Default LLM-call budget per invocation. Default 500. */
  maxLlmCalls?: number;
  /** Named fault points for durability tests: throw or hang to simulate a crash at that point. */
  faults?: (
    point: string,
    info: { invocationId: string; path: string; attempt: number },
  ) => void | Promise<void>;
  /** Look for lost work every this many ms (0 disables). Default: half the lease, at most 5 000. */
  reconcileIntervalMs?: number;
  /** A node is re-woken by the reconciler after showing no progress for this long. Default: the lease. */
  reconcileStaleMs?: number;
  /** Delay before a job of another definition of an app is offered again (rolling deploys). Default 5 000 ms. */
  deferMs?: number;
  /** Called back when step jobs end and registered models and tools answer (metrics); see observer.ts. */
  observer?: EngineObserver;
}

/** The parts an engine runs on, resolved from {@link EngineOptions} by `createEngine`. */
export interface EngineParts {
  store: Store;
  queue: StepQueue;
  bus: Bus;
  apps: ReadonlyMap<string, RegisteredApp>;
  logger: Logger;
  models: Map<string, Model>;
  tools: Map<string, Tool>;
  geminiApiKey: string | undefined;
}

/** A control message on the bus: stop the running steps of an invocation. */
const controlSchema = z.object({ invocationId: z.string(), reason: z.enum(['cancelled', 'ended']) });

/** Input of {@link Engine.enqueue}. */
export interface EnqueueInput {
  app: string;
  userId: string;
  sessionId?: string;
  input: string | Content;
  stateDelta?: Record<string, unknown>;
  maxLlmCalls?: number;
  idempotencyKey?: string;
  createdBy?: string;
  /**
   * Where the invocation starts in an existing session: `'auto'` (default) at the agent the conversation was last
   * transferred to, when it can still transfer back up the tree (ADK's Runner rule; otherwise the root); `'root'`
   * always at the app's root agent. A new session always starts at the root.
   */
  startAt?: StartAt;
}

function startAtOf(input: EnqueueInput): StartAt {
  const startAt = input.startAt ?? 'auto';
  if (startAt !== 'auto' && startAt !== 'root') {
    const got = JSON.stringify(startAt);
    throw new AgentloomError('VALIDATION', `startAt must be 'auto' or 'root', got ${got}`, {
      details: { field: 'startAt' },
    });
  }
  return startAt;
}

/** A running agentloom engine. */
export class Engine {
  readonly store: Store;
  readonly apps: ReadonlyMap<string, RegisteredApp>;
  readonly logger: Logger;
  private readonly queue: StepQueue;
  private readonly bus: Bus;
  private readonly scheduler: Scheduler;
  private stopWorker: StopConsuming | undefined;
  private unsubscribeControl: (() => void) | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling = false;
  private closed = false;
  /** Partial events received from the bus, by invocation id (never stored). */
  private readonly partials = new EventEmitter();
  private partialsSubscribed: Promise<unknown> | undefined;
  private readonly leaseMs: number;

  constructor(
    parts: EngineParts,
    private readonly options: Omit<EngineOptions, 'apps'>,
  ) {
    this.store = parts.store;
    this.queue = parts.queue;
    this.bus = parts.bus;
    this.apps = parts.apps;
    this.logger = parts.logger;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.partials.setMaxListeners(0);
    const geminiCache = new Map<string, Model>();
    const { geminiApiKey } = parts;
    const { observer } = options;
    this.scheduler = new Scheduler({
      store: parts.store,
      queue: parts.queue,
      apps: parts.apps,
      logger: parts.logger,
      owner: `${hostname()}:${process.pid}:${newId().slice(0, 8)}`,
      leaseMs: this.leaseMs,
      maxStepMs: options.maxStepMs ?? 600_000,
      deferMs: options.deferMs ?? 5_000,
      models: observeModels(parts.models, observer, parts.logger),
      tools: observeTools(parts.tools, observer, parts.logger),
      defaultModel: (name) => {
        if (!geminiApiKey || !name.startsWith('gemini')) return undefined;
        let model = geminiCache.get(name);
        if (!model) {
          model = observeModel(new Gemini({ model: name, apiKey: geminiApiKey }), observer, parts.logger);
          geminiCache.set(name, model);
        }
        return model;
      },
      fault: async (point, info) => {
        await options.faults?.(point, info);
      },
      partials: (event) => {
        this.bus
          .publish('partial', JSON.stringify(event))
          .catch((err: unknown) => this.logger.debug({ err }, 'partial event not published'));
      },
      onInvocationEnded: (invocationId) => this.stopSteps(invocationId, 'ended'),
      ...(observer?.onModelCall
        ? { observeModel: cachedPerInstance((m: Model) => observeModel(m, observer, parts.logger)) }
        : {}),
      ...(observer?.onToolCall
        ? { observeTool: cachedPerInstance((t: Tool) => observeTool(t, observer, parts.logger)) }
        : {}),
      ...(observer?.onStep
        ? { observeStep: (run: StepRun) => notify(observer.onStep?.bind(observer), run, parts.logger) }
        : {}),
    });
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
      const parsed = controlSchema.safeParse(safeJson(message));
      if (!parsed.success) return;
      const { invocationId, reason } = parsed.data;
      this.scheduler.abort(
        invocationId,
        new AgentloomError(
          'CANCELLED',
          reason === 'ended' ? 'the invocation was ended by endInvocation' : 'the invocation was cancelled',
        ),
      );
    });
    const handler = observeSteps((job) => this.scheduler.handle(job), this.options.observer, this.logger);
    this.stopWorker = await this.queue.process(handler, {
      concurrency: options.concurrency ?? 64,
      definitions: [...this.apps.values()].map((app) => app.definitionHash),
    });
    const interval = this.options.reconcileIntervalMs ?? Math.min(5_000, Math.floor(this.leaseMs / 2));
    if (interval > 0) {
      this.reconcileTimer = setInterval(() => {
        if (this.reconciling) return;
        this.reconciling = true;
        this.reconcile()
          .catch((err: unknown) => this.logger.warn({ err }, 'reconcile failed'))
          .finally(() => (this.reconciling = false));
      }, interval);
      this.reconcileTimer.unref();
    }
    return { stop: () => this.stopWorkerNow() };
  }

  private async stopWorkerNow(abrupt = false): Promise<void> {
    clearInterval(this.reconcileTimer);
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
    if (jobs.length === 0) return 0;
    this.logger.info({ nodes: jobs.length }, 'reconciler re-woke nodes');
    await this.queue.enqueue(jobs);
    return jobs.length;
  }

  /** Tells every process to stop the running steps of an invocation (after the commit that ended it). */
  private stopSteps(invocationId: string, reason: 'cancelled' | 'ended'): void {
    this.scheduler.abort(invocationId);
    this.bus
      .publish('control', JSON.stringify({ invocationId, reason }))
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
  async enqueue(input: EnqueueInput): Promise<{ invocationId: string; sessionId: string; status: string }> {
    const app = this.apps.get(input?.app);
    if (!app) {
      throw new AgentloomError(
        'NOT_FOUND',
        `app "${String(input?.app)}" is not registered; known apps: ${[...this.apps.keys()].join(', ')}`,
        {
          details: { field: 'app' },
        },
      );
    }
    if (typeof input.userId !== 'string' || input.userId === '') {
      throw new AgentloomError('VALIDATION', 'userId must be a non-empty string', {
        details: { field: 'userId' },
      });
    }
    const content = typeof input.input === 'string' ? userText(input.input) : input.input;
    if (!content || !Array.isArray(content.parts)) {
      throw new AgentloomError('VALIDATION', 'input must be a string or a Content {role, parts}', {
        details: { field: 'input' },
      });
    }
    if (input.stateDelta !== undefined) assertPlainObject(input.stateDelta, 'stateDelta');
    const maxLlmCalls = input.maxLlmCalls ?? this.options.maxLlmCalls ?? 500;
    if (!Number.isInteger(maxLlmCalls) || maxLlmCalls < 1) {
      throw new AgentloomError('VALIDATION', 'maxLlmCalls must be an integer ≥ 1', {
        details: { field: 'maxLlmCalls' },
      });
    }
    const startAt = startAtOf(input);
    if (input.sessionId === undefined && input.idempotencyKey === undefined) {
      const fast = await this.enqueueInNewSession(app, input, content, maxLlmCalls);
      if (fast) return fast;
    }
    const result = await this.store.transaction(async (tx) => {
      let sessionId = input.sessionId;
      const existing = sessionId ? await getSession(tx, sessionId) : undefined;
      if (existing && (existing.app !== app.name || existing.userId !== input.userId)) {
        throw new AgentloomError('CONFLICT', `session "${sessionId}" belongs to another app or user`, {
          details: { field: 'sessionId' },
        });
      }
      if (!existing)
        sessionId = (await createSessionTx(tx, { app: app.name, userId: input.userId, id: sessionId })).id;
      const start = existing && startAt === 'auto' ? await agentToContinue(tx, app, existing.id) : app.root;
      const id = newId('inv');
      const { row, created } = await insertInvocationTx(tx, {
        id,
        app: app.name,
        sessionId: sessionId as string,
        userId: input.userId,
        rootAgent: start.name,
        definitionHash: app.definitionHash,
        status: 'queued',
        input: content as unknown as Record<string, unknown>,
        maxLlmCalls,
        idempotencyKey: input.idempotencyKey ?? null,
        createdBy: input.createdBy ?? null,
      });
      if (!created) return { row, jobs: [] as NodeJobRef[] };
      await appendEventTx(tx, {
        sessionId: row.sessionId,
        invocationId: id,
        event: {
          author: 'user',
          content: { ...content, role: 'user' },
          actions: { stateDelta: input.stateDelta ?? {}, artifactDelta: {} },
        },
      });
      const job = await insertNodeTx(tx, {
        invocationId: id,
        path: start.name,
        parentPath: null,
        agent: start.name,
        kind: nodeKind(start),
        branch: null,
      });
      return { row, jobs: job ? [job] : [] };
    });
    await this.wake(result.jobs, result.row.definitionHash);
    return { invocationId: result.row.id, sessionId: result.row.sessionId, status: result.row.status };
  }

  /**
   * The common enqueue, a new session whose state (if any) is session-scoped: one statement (see
   * {@link insertInvocationInNewSession}). Undefined when the input needs the transactional path.
   */
  private async enqueueInNewSession(
    app: RegisteredApp,
    input: EnqueueInput,
    content: Content,
    maxLlmCalls: number,
  ): Promise<{ invocationId: string; sessionId: string; status: string } | undefined> {
    const sessionId = newId('ses');
    const invocationId = newId('inv');
    const prepared = prepareEvent({
      sessionId,
      invocationId,
      event: {
        author: 'user',
        content: { ...content, role: 'user' },
        actions: { stateDelta: input.stateDelta ?? {}, artifactDelta: {} },
      },
    });
    const { delta, appends } = prepared;
    if ((['app', 'user', 'temp'] as const).some((scope) => touches(delta, appends, scope))) return undefined;
    const wake = await insertInvocationInNewSession(this.store.db, {
      sessionId,
      app: app.name,
      userId: input.userId,
      sessionState: applyToState({}, delta.session, appends.session),
      invocation: {
        id: invocationId,
        rootAgent: app.root.name,
        definitionHash: app.definitionHash,
        input: content as unknown as Record<string, unknown>,
        maxLlmCalls,
        createdBy: input.createdBy ?? null,
      },
      event: eventInsertOf(prepared.row),
      root: { path: app.root.name, agent: app.root.name, kind: nodeKind(app.root) },
    });
    const now = new Date();
    const inv: InvocationRow = {
      id: invocationId,
      app: app.name,
      sessionId,
      userId: input.userId,
      rootAgent: app.root.name,
      definitionHash: app.definitionHash,
      status: 'queued',
      input: content as unknown as Record<string, unknown>,
      output: null,
      escalated: false,
      error: null,
      tempState: {},
      llmCalls: 0,
      maxLlmCalls,
      idempotencyKey: null,
      createdBy: input.createdBy ?? null,
      createdAt: now,
      updatedAt: now,
      endedAt: null,
    };
    const root: NodeRow = {
      invocationId,
      path: app.root.name,
      parentPath: null,
      agent: app.root.name,
      kind: nodeKind(app.root),
      branch: null,
      status: 'pending',
      checkpoint: {},
      escalated: false,
      output: null,
      error: null,
      attempt: 0,
      wake,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: now,
      updatedAt: now,
    };
    // A workflow root's job starts from the row just written (no first read); see StepJob.hint.
    const hint: JobHint | undefined =
      app.root instanceof WorkflowAgent ? { inv, agent: app.root.name, node: root } : undefined;
    await this.wake(
      [{ invocationId, path: app.root.name, wake, ...(hint ? { hint } : {}) }],
      app.definitionHash,
    );
    return { invocationId, sessionId, status: 'queued' };
  }

  private async requireInvocation(id: string): Promise<InvocationRow> {
    const row = await getInvocation(this.store.db, id);
    if (!row)
      throw new AgentloomError('NOT_FOUND', `invocation ${id} does not exist`, {
        details: { invocationId: id },
      });
    return row;
  }

  /** The invocation with its pending calls (CONTRACT.md `engine.get`). */
  async get(invocationId: string): Promise<InvocationView> {
    const found = await invocationWithPending(this.store.db, invocationId);
    if (!found)
      throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
        details: { invocationId },
      });
    return invocationView(found.inv, found.pending);
  }

  /** The invocation's nodes (the checkpoint table): path, agent, status, checkpoint, attempt. */
  async nodes(invocationId: string): Promise<NodeView[]> {
    await this.requireInvocation(invocationId);
    const rows = await invocationNodes(this.store.db, invocationId);
    return rows
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.path.localeCompare(b.path))
      .map((r) => ({
        path: r.path,
        agent: r.agent,
        kind: r.kind,
        status: r.status,
        branch: r.branch ?? undefined,
        checkpoint: r.checkpoint,
        escalated: r.escalated,
        attempt: r.attempt,
      }));
  }

  /** Resolves when the invocation is completed, paused, failed or cancelled (TIMEOUT after `timeoutMs`). */
  wait(invocationId: string, options: { timeoutMs?: number } = {}): Promise<InvocationView> {
    return waitForSettled(this.store, () => this.get(invocationId), invocationId, options.timeoutMs);
  }

  /**
   * The invocation's events in seq order; with `follow`, keeps yielding new ones until it settles, and with
   * `partial` also the streamed partial events of steps running in this process (never stored).
   */
  async *events(
    invocationId: string,
    options: { afterSeq?: number; follow?: boolean; partial?: boolean } = {},
  ): AsyncGenerator<Event> {
    const inv = await this.requireInvocation(invocationId);
    if (options.follow && options.partial) await this.subscribePartials();
    yield* followEvents({
      store: this.store,
      partials: this.partials,
      invocationId,
      sessionId: inv.sessionId,
      status: async () => (await this.requireInvocation(invocationId)).status,
      ...options,
    });
  }

  /** Feeds partial events from the bus (published by whichever process runs the step) to local followers. */
  private subscribePartials(): Promise<unknown> {
    this.partialsSubscribed ??= this.bus.subscribe('partial', (message) => {
      const event = safeJson(message) as Event | undefined;
      if (event && typeof event.invocationId === 'string') this.partials.emit(event.invocationId, event);
    });
    return this.partialsSubscribed;
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
    for (const response of input.functionResponses) {
      const { jobs, definition } = await this.store.transaction(async (tx) => {
        const answered = await answerTx(tx, response, { invocationId: input.invocationId, by: input.by });
        // Refuse (rolling the answer back) when this engine would resume the invocation on a changed tree.
        const inv = await getInvocation(tx, answered.invocationId);
        this.assertSameDefinition(inv);
        return { jobs: answered.jobs, definition: inv?.definitionHash ?? '' };
      });
      await this.wake(jobs, definition);
    }
  }

  private assertSameDefinition(inv: InvocationRow | undefined): void {
    if (!inv) return;
    const app = this.apps.get(inv.app);
    if (!app || app.definitionHash !== inv.definitionHash) {
      throw new AgentloomError(
        'DEFINITION_MISMATCH',
        `invocation ${inv.id} was started with another definition of app "${inv.app}"; answer it from an engine that serves that definition (changing the agent tree under a running invocation would resume it against checkpoints of a different workflow)`,
        {
          details: {
            invocationId: inv.id,
            expected: inv.definitionHash,
            actual: app?.definitionHash ?? null,
          },
        },
      );
    }
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
    const cancelled = await this.store.transaction((tx) => cancelTx(tx, invocationId));
    if (cancelled) this.stopSteps(invocationId, 'cancelled');
    return this.get(invocationId);
  }

  /** Runs a failed or cancelled invocation again from its checkpoints. */
  async retry(invocationId: string, options: { maxLlmCalls?: number } = {}): Promise<InvocationView> {
    const inv = await this.requireInvocation(invocationId);
    this.assertSameDefinition(inv);
    const jobs = await this.store.transaction((tx) => retryTx(tx, invocationId, options.maxLlmCalls));
    await this.wake(jobs, inv.definitionHash);
    return this.get(invocationId);
  }

  /** A session with its state and events. */
  async getSession(
    sessionId: string,
  ): Promise<{ id: string; app: string; userId: string; state: Record<string, unknown>; events: Event[] }> {
    const session = await getSession(this.store.db, sessionId);
    if (!session)
      throw new AgentloomError('NOT_FOUND', `session ${sessionId} does not exist`, {
        details: { sessionId },
      });
    const events = await listEvents(this.store.db, sessionId);
    return { id: session.id, app: session.app, userId: session.userId, state: session.state, events };
  }

  /** Stops the worker (waiting for running steps unless `abrupt`) and closes the store and queue. */
  async close(options: { abrupt?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stopWorkerNow(options.abrupt ?? false);
    await this.queue.close();
    await this.bus.close();
    await this.store.close();
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `wrap` applied once per instance: the same wrapper for the same model or tool every time. */
function cachedPerInstance<T extends object>(wrap: (value: T) => T): (value: T) => T {
  const wrapped = new WeakMap<T, T>();
  return (value) => {
    let result = wrapped.get(value);
    if (!result) {
      result = wrap(value);
      wrapped.set(value, result);
    }
    return result;
  };
}
