/**
 * Enqueueing an invocation (CONTRACT.md `engine.enqueue`): the input validated, then the user event, the
 * invocation and its first node stored (one statement for a new session, else one transaction), then its wake-up.
 * Called by the Engine; calls store/ only.
 */
import { WorkflowAgent } from '../../agents/workflow/workflow.js';
import { userText, type Content } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';
import { validateBudget, type Budget } from '../../models/budget/budget.js';
import { newId } from '../../core/ids.js';
import { formatTraceparent, parseTraceparent } from '../../core/trace-context.js';
import { appendEventTx, prepareEvent } from '../../store/repos/events.js';
import { insertInvocationTx, type InvocationRow } from '../../store/repos/invocations.js';
import { insertInvocationInNewSession } from '../../store/step/new-session-invocation.js';
import { insertNodeTx, type NodeJobRef, type NodeRow } from '../../store/repos/nodes.js';
import { createSessionTx, getSession, lockSessionKeyTx } from '../../store/repos/sessions.js';
import { applyToState, assertPlainObject, touches } from '../../store/repos/state.js';
import { eventInsertOf } from '../../store/repos/step-rows.js';
import type { Store } from '../../store/store.js';
import type { RegisteredApp } from '../apps/registry.js';
import { agentToContinue, type StartAt } from './start-agent.js';
import { nodeKind, type JobHint } from '../step/env/step-env.js';
import { rootStartAtEnqueue } from '../step/root-start.js';
import type { SettleWatch } from './follow/settle-watch.js';
import type { PluginManager } from '../../plugins/plugin-manager.js';
import type { JobsInStatement, StepJob } from '../../queue/step-queue.js';

/** What an enqueue needs of its engine. */
export interface EnqueueContext {
  store: Store;
  apps: ReadonlyMap<string, RegisteredApp>;
  /** The LLM-call budget of an invocation that sets none. */
  defaultMaxLlmCalls: number;
  /** Enqueues wake-ups after the commit (a failure is logged, never thrown). */
  wake: (jobs: NodeJobRef[], definition: string) => Promise<void>;
  /**
   * Write a workflow root's first advance with the enqueue when it can be (see step/root-start.ts): set where the
   * queue is shared, so the run's first job is its first leaf's instead of a trip of the root through the queue.
   * (With the in-process queue the root's job already starts from the enqueue's rows and claims the first leaf
   * in its advance.)
   */
  rootAtEnqueue?: boolean;
  /**
   * The queue's jobs added by the store's statements (a queue in the store's database): the first leaves' jobs of
   * a run whose root advances at enqueue are then added by the enqueue's own statement, not after its commit.
   */
  jobsInStatement?: JobsInStatement;
  /** Told of each invocation enqueued (listening first), so that `wait` knows it unsettled without a read. */
  settles?: SettleWatch;
  /** The plugins: their onUserMessageCallback may replace the message before it is stored. */
  plugins?: PluginManager;
}

/** What an enqueue answers. */
export interface Enqueued {
  invocationId: string;
  sessionId: string;
  status: string;
}

/** Input of `Engine.enqueue`. */
export interface EnqueueInput {
  app: string;
  userId: string;
  sessionId?: string;
  input: string | Content;
  stateDelta?: Record<string, unknown>;
  maxLlmCalls?: number;
  /**
   * This run's budget of model spending (README "Budgets"): overrides the app's budget field by field (a limit set
   * to null removes the app's). Checked before each model call.
   */
  budget?: Budget;
  idempotencyKey?: string;
  createdBy?: string;
  /**
   * The caller's W3C trace context (the `traceparent` header): the run's root span becomes a child of the caller's
   * span. A malformed value is ignored (the run gets a trace of its own): see `parseTraceparent`.
   */
  traceparent?: string;
  /**
   * Where the invocation starts in an existing session: `'auto'` (default) at the agent the conversation was last
   * transferred to, when it can still transfer back up the tree (ADK's Runner rule; otherwise the root); `'root'`
   * always at the app's root agent. A new session always starts at the root.
   */
  startAt?: StartAt;
}

/**
 * The budget a run starts with: the app's, overridden field by field by the invocation's (a field set to null
 * drops the app's); null when neither has one. Checked naming the field.
 */
function runBudget(app: RegisteredApp, own: Budget | undefined): Record<string, unknown> | null {
  if (own === undefined || own === null) return app.budget ? { ...app.budget } : null;
  const merged: Record<string, unknown> = { ...app.budget, ...validateBudget(dropNulls(own), 'budget') };
  for (const [key, value] of Object.entries(own)) if (value === null) delete merged[key];
  return Object.keys(merged).length > 0 ? merged : null;
}

function dropNulls(budget: Budget): Budget {
  if (typeof budget !== 'object' || budget === null) return budget;
  return Object.fromEntries(Object.entries(budget).filter(([, v]) => v !== null)) as Budget;
}

/** The caller's trace context as stored: normalised, or null when absent or malformed. */
function traceparentOf(input: EnqueueInput): string | null {
  const parsed = parseTraceparent(input.traceparent);
  return parsed ? formatTraceparent(parsed) : null;
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

/**
 * Enqueues an invocation: stores the user event, the invocation and its first node (the root agent, or in an
 * existing session the agent that took the conversation over — see `startAt`), then wakes that node.
 */
export async function enqueueInvocation(ctx: EnqueueContext, input: EnqueueInput): Promise<Enqueued> {
  // Listening before the invocation exists, so that its settling cannot go unnoticed (settle-watch.ts).
  await ctx.settles?.ready();
  const enqueued = await storeInvocation(ctx, input);
  // Queued as read after the LISTEN began (new, or an idempotent repeat still queued): its settling is notified.
  if (enqueued.status === 'queued') ctx.settles?.enqueued(enqueued.invocationId);
  return enqueued;
}

/**
 * The message to store: the plugins' onUserMessageCallback answer, if one gives one (ADK's replacement), else the
 * user's. Asked in the enqueueing process before anything is stored (the run has no id yet: `invocationId` is '').
 */
async function userMessageOf(
  ctx: EnqueueContext,
  app: RegisteredApp,
  input: EnqueueInput,
  userMessage: Content,
): Promise<Content> {
  if (!ctx.plugins?.has('onUserMessageCallback')) return userMessage;
  const invocationContext = {
    invocationId: '',
    appName: app.name,
    userId: input.userId,
    sessionId: input.sessionId ?? '',
    rootAgent: app.root.name,
  };
  const replaced = await ctx.plugins.run('onUserMessageCallback', { invocationContext, userMessage });
  return replaced ? { ...replaced, role: 'user' } : userMessage;
}

async function storeInvocation(ctx: EnqueueContext, input: EnqueueInput): Promise<Enqueued> {
  const app = ctx.apps.get(input?.app);
  if (!app) {
    throw new AgentloomError(
      'NOT_FOUND',
      `app "${String(input?.app)}" is not registered; known apps: ${[...ctx.apps.keys()].join(', ')}`,
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
  const given = typeof input.input === 'string' ? userText(input.input) : input.input;
  if (!given || !Array.isArray(given.parts)) {
    throw new AgentloomError('VALIDATION', 'input must be a string or a Content {role, parts}', {
      details: { field: 'input' },
    });
  }
  const content = await userMessageOf(ctx, app, input, given);
  if (input.stateDelta !== undefined) assertPlainObject(input.stateDelta, 'stateDelta');
  const maxLlmCalls = input.maxLlmCalls ?? ctx.defaultMaxLlmCalls;
  if (!Number.isInteger(maxLlmCalls) || maxLlmCalls < 1) {
    throw new AgentloomError('VALIDATION', 'maxLlmCalls must be an integer ≥ 1', {
      details: { field: 'maxLlmCalls' },
    });
  }
  const startAt = startAtOf(input);
  const budget = runBudget(app, input.budget);
  if (input.sessionId === undefined && input.idempotencyKey === undefined) {
    const fast = await enqueueInNewSession(ctx, { app, input, content, maxLlmCalls, budget });
    if (fast) return fast;
  }
  const result = await ctx.store.transaction(async (tx) => {
    let sessionId = input.sessionId;
    // Kept from retention until this commit (a session pruned meanwhile is created anew, empty).
    if (sessionId) await lockSessionKeyTx(tx, sessionId);
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
      budget,
      idempotencyKey: input.idempotencyKey ?? null,
      createdBy: input.createdBy ?? null,
      traceparent: traceparentOf(input),
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
  await ctx.wake(result.jobs, result.row.definitionHash);
  return { invocationId: result.row.id, sessionId: result.row.sessionId, status: result.row.status };
}

/**
 * The common enqueue, a new session whose state (if any) is session-scoped: one statement (see
 * {@link insertInvocationInNewSession}). Undefined when the input needs the transactional path.
 */
async function enqueueInNewSession(
  ctx: EnqueueContext,
  {
    app,
    input,
    content,
    maxLlmCalls,
    budget,
  }: {
    app: RegisteredApp;
    input: EnqueueInput;
    content: Content;
    maxLlmCalls: number;
    budget: Record<string, unknown> | null;
  },
): Promise<Enqueued | undefined> {
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
  const rootStart = ctx.rootAtEnqueue ? rootStartAtEnqueue(app.root) : undefined;
  const leaves: StepJob[] = (rootStart?.leaves ?? []).map((leaf) => ({
    invocationId,
    path: leaf.path,
    wake: 1,
    definition: app.definitionHash,
  }));
  const jobs = leaves.length > 0 ? await jobsInStatement(ctx.jobsInStatement, leaves) : undefined;
  const wake = await insertInvocationInNewSession(ctx.store.db, {
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
      budget,
      createdBy: input.createdBy ?? null,
      traceparent: traceparentOf(input),
    },
    event: eventInsertOf(prepared.row),
    root: { path: app.root.name, agent: app.root.name, kind: nodeKind(app.root) },
    ...(rootStart ? { rootStart } : {}),
    ...(jobs ? { jobs } : {}),
  });
  if (rootStart) {
    if (!jobs) await ctx.wake(leaves, app.definitionHash);
    return { invocationId, sessionId, status: 'queued' };
  }
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
    traceparent: traceparentOf(input),
    forkedFrom: null,
    fork: null,
    budget,
    createdAt: now,
    updatedAt: now,
    endedAt: null,
    runEndHandledAt: now,
    beforeRunAt: null,
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
    waiting: null,
    createdAt: now,
    updatedAt: now,
  };
  // A workflow root's job starts from the row just written (no first read); see StepJob.hint.
  const hint: JobHint | undefined =
    app.root instanceof WorkflowAgent ? { inv, agent: app.root.name, node: root } : undefined;
  await ctx.wake(
    [{ invocationId, path: app.root.name, wake, ...(hint ? { hint } : {}) }],
    app.definitionHash,
  );
  return { invocationId, sessionId, status: 'queued' };
}

/**
 * The jobs of `leaves` for the enqueue's own statement, when the queue offers that and its tables are ready;
 * undefined otherwise (they are then enqueued after the commit, as with any other queue).
 */
async function jobsInStatement(
  queue: JobsInStatement | undefined,
  leaves: readonly StepJob[],
): Promise<{ addCall: string; entries: Record<string, unknown>[] } | undefined> {
  if (!queue) return undefined;
  try {
    await queue.ready();
  } catch {
    return undefined;
  }
  return { addCall: queue.addCall, entries: queue.entries(leaves) };
}
