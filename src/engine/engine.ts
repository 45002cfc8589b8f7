/**
 * The engine: the one code path of every mode. It talks to a Store (PostgreSQL or PGlite) and a StepQueue
 * (in-process or BullMQ) and never branches on which. `createEngine` wires them (CONTRACT.md "engine").
 */
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { userText, type Content } from '../core/content.js';
import { AgentloomError } from '../core/errors.js';
import type { Event } from '../core/event.js';
import { newId } from '../core/ids.js';
import type { Model } from '../models/model.js';
import { Gemini } from '../models/gemini.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import type { StepQueue } from '../queue/step-queue.js';
import { appendEventTx, listEvents } from '../store/events.js';
import { getInvocation, insertInvocationTx, type InvocationRow } from '../store/invocations.js';
import {
  expireAllLeases,
  insertNodeTx,
  invocationNodes,
  runnableNodes,
  type NodeJobRef,
} from '../store/nodes.js';
import { createSessionTx, getSession } from '../store/sessions.js';
import { assertPlainObject } from '../store/state.js';
import { Store } from '../store/store.js';
import { pendingToolRequests } from '../store/tool-requests.js';
import type { Tool } from '../tools/tool.js';
import { loadEnv } from '../config/env.js';
import { cancelTx, retryTx } from './control.js';
import { registerApps, type AppDefinition, type RegisteredApp } from './registry.js';
import { answerTx, type FunctionResponseInput } from './resume.js';
import { nodeKind, Scheduler } from './scheduler.js';
import { followEvents, waitForSettled } from './follow.js';
import { invocationView, type InvocationView, type NodeView } from './views.js';

/** Options of {@link createEngine}. */
export interface EngineOptions {
  apps: AppDefinition[];
  /** Default: $DATABASE_URL, else PGlite on disk under `.agentloom/data`. */
  database?: string | { pglite: string };
  /** Default: 'local' (the in-process queue). */
  queue?: 'local' | StepQueue;
  logger?: Logger;
  tools?: Record<string, Tool>;
  models?: Record<string, Model>;
  /** Gemini API key for models named by a Gemini id. Default: $GEMINI_API_KEY / $GOOGLE_API_KEY. */
  geminiApiKey?: string;
  /** Start a worker in this process. Default true for embedded engines. */
  worker?: boolean | { concurrency?: number };
  /** Lease of a running step; a step whose worker died is taken over after this. Default 15 000 ms. */
  leaseMs?: number;
  /** Default LLM-call budget per invocation. Default 500. */
  maxLlmCalls?: number;
  /** Named fault points for durability tests: throw or hang to simulate a crash at that point. */
  faults?: (
    point: string,
    info: { invocationId: string; path: string; attempt: number },
  ) => void | Promise<void>;
  /** Re-enqueue lost work every this many ms (0 disables). Default 5 000. */
  reconcileIntervalMs?: number;
}

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
}

/** A running agentloom engine. */
export class Engine {
  private readonly scheduler: Scheduler;
  private stopWorker: ((o?: { abrupt?: boolean }) => Promise<void>) | undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** In-process pub/sub of partial events, by invocation id (never stored). */
  private readonly partials = new EventEmitter();

  constructor(
    readonly store: Store,
    private readonly queue: StepQueue,
    readonly apps: ReadonlyMap<string, RegisteredApp>,
    readonly logger: Logger,
    private readonly options: EngineOptions,
    models: Map<string, Model>,
    geminiApiKey: string | undefined,
  ) {
    this.partials.setMaxListeners(0);
    const tools = new Map(Object.entries(options.tools ?? {}));
    const geminiCache = new Map<string, Model>();
    this.scheduler = new Scheduler({
      store,
      queue,
      apps,
      logger,
      owner: `${hostname()}:${process.pid}:${newId().slice(0, 8)}`,
      leaseMs: options.leaseMs ?? 15_000,
      models,
      tools,
      defaultModel: (name) => {
        if (!geminiApiKey || !name.startsWith('gemini')) return undefined;
        let model = geminiCache.get(name);
        if (!model) geminiCache.set(name, (model = new Gemini({ model: name, apiKey: geminiApiKey })));
        return model;
      },
      fault: async (point, info) => {
        await options.faults?.(point, info);
      },
      partials: (event) => this.partials.emit(event.invocationId, event),
    });
  }

  /** Starts consuming step jobs in this process. */
  async startWorker(options: { concurrency?: number } = {}): Promise<{ stop: () => Promise<void> }> {
    if (this.stopWorker) return { stop: () => this.stopWorkerNow() };
    this.stopWorker = await this.queue.process((job) => this.scheduler.handle(job), {
      concurrency: options.concurrency ?? 8,
    });
    const interval = this.options.reconcileIntervalMs ?? 5_000;
    if (interval > 0) {
      this.reconcileTimer = setInterval(() => {
        this.reconcile(interval).catch((err: unknown) => this.logger.warn({ err }, 'reconcile failed'));
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
  }

  /** Re-enqueues nodes that should be running but have no live job (lost queue entries, dead workers). */
  async reconcile(olderThanMs = 0): Promise<number> {
    const rows = await runnableNodes(this.store.db, { olderThanMs });
    await this.queue.enqueue(rows.map((r) => ({ invocationId: r.invocationId, path: r.path, wake: r.wake })));
    return rows.length;
  }

  /** Enqueues an invocation: stores the user event, the invocation and its root node, then wakes the root. */
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
      const id = newId('inv');
      const { row, created } = await insertInvocationTx(tx, {
        id,
        app: app.name,
        sessionId: sessionId as string,
        userId: input.userId,
        rootAgent: app.root.name,
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
        path: app.root.name,
        parentPath: null,
        agent: app.root.name,
        kind: nodeKind(app.root),
        branch: null,
      });
      return { row, jobs: job ? [job] : [] };
    });
    await this.queue.enqueue(result.jobs);
    return { invocationId: result.row.id, sessionId: result.row.sessionId, status: result.row.status };
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
    const row = await this.requireInvocation(invocationId);
    return invocationView(row, await pendingToolRequests(this.store.db, invocationId));
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
    yield* followEvents({
      store: this.store,
      partials: this.partials,
      invocationId,
      sessionId: inv.sessionId,
      status: async () => (await this.requireInvocation(invocationId)).status,
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
    for (const response of input.functionResponses) {
      const { jobs } = await this.store.transaction(async (tx) => {
        const answered = await answerTx(tx, response, { invocationId: input.invocationId, by: input.by });
        // Refuse (rolling the answer back) when this engine would resume the invocation on a changed tree.
        this.assertSameDefinition(await getInvocation(tx, answered.invocationId));
        return answered;
      });
      await this.queue.enqueue(jobs);
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
    await this.store.transaction((tx) => cancelTx(tx, invocationId));
    this.scheduler.abort(invocationId);
    return this.get(invocationId);
  }

  /** Runs a failed or cancelled invocation again from its checkpoints. */
  async retry(invocationId: string, options: { maxLlmCalls?: number } = {}): Promise<InvocationView> {
    this.assertSameDefinition(await this.requireInvocation(invocationId));
    const jobs = await this.store.transaction((tx) => retryTx(tx, invocationId, options.maxLlmCalls));
    await this.queue.enqueue(jobs);
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
    await this.store.close();
  }
}

/** Creates an engine (PGlite + in-process queue unless told otherwise) and, by default, starts its worker. */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const env = loadEnv();
  const apps = registerApps(options.apps ?? []);
  const logger = options.logger ?? pino({ level: env.LOG_LEVEL ?? 'warn' });
  const target = options.database ?? env.DATABASE_URL ?? { pglite: '.agentloom/data' };
  const store = await Store.open(target, typeof target === 'string' ? { poolSize: 20 } : {});
  const queue =
    options.queue === undefined || options.queue === 'local'
      ? new InProcessQueue({
          onError: (err, job) =>
            logger.warn(
              { err, invocationId: job.invocationId, nodePath: job.path },
              'step failed; redelivering',
            ),
        })
      : options.queue;
  const models = new Map(Object.entries(options.models ?? {}));
  const engine = new Engine(
    store,
    queue,
    apps,
    logger,
    options,
    models,
    options.geminiApiKey ?? env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY,
  );
  // An embedded engine owns its PGlite directory: any lease in it belongs to a process that is gone.
  if (store.database.kind === 'pglite') await expireAllLeases(store.db);
  const worker = options.worker ?? true;
  if (worker !== false) {
    await engine.startWorker(typeof worker === 'object' ? worker : {});
    await engine.reconcile();
  }
  return engine;
}
