/**
 * Executing a step (ARCHITECTURE.md): a job names a node; a workflow node advances its state machine in one
 * transaction; a leaf node is claimed (fencing attempt + lease), run, and committed as completed / paused /
 * waiting / failed in one transaction that also advances its workflow parent (or wakes a leaf parent), so
 * "child ended" and "parent advanced" are never apart. Postgres decides; the queue only wakes.
 */
import type { Logger } from 'pino';
import type { BaseAgent } from '../agents/base-agent.js';
import { NodeSuspended, type LeafOutcome } from '../agents/context.js';
import {
  SETTLED,
  WorkflowAgent,
  type ChildView,
  type NodeStatus,
  type WorkflowDecision,
} from '../agents/workflow.js';
import {
  AgentloomError,
  hasErrorCode,
  isInfrastructureError,
  toStoredError,
  type StoredError,
} from '../core/errors.js';
import type { StepJob, StepQueue } from '../queue/step-queue.js';
import type { Db } from '../store/database.js';
import { appendEventTx, lastFinalText, listEvents } from '../store/events.js';
import {
  getInvocation,
  getInvocationWithNode,
  setInvocationStatusTx,
  TERMINAL_INVOCATION,
  type InvocationRow,
} from '../store/invocations.js';
import {
  childNodes,
  nodesAt,
  claimLeafTx,
  getNode,
  insertNodeTx,
  invocationNodes,
  releaseLease,
  renewLease,
  settleLeafTx,
  updateNodeTx,
  wakeNodeTx,
  type NodeJobRef,
  type NodeRow,
} from '../store/nodes.js';
import { readInvocationState } from '../store/sessions.js';
import type { Store } from '../store/store.js';
import { anyAnswered, cancelToolRequestsTx, insertToolRequestsTx } from '../store/tool-requests.js';
import { EngineNodeRuntime, LeaseGuard, type NodeRuntimeDeps } from './node-runtime.js';
import type { RegisteredApp } from './registry.js';

/** Dependencies of the scheduler. */
export interface SchedulerDeps extends NodeRuntimeDeps {
  store: Store;
  queue: StepQueue;
  apps: ReadonlyMap<string, RegisteredApp>;
  logger: Logger;
  /** Identifies this worker in leases. */
  owner: string;
  leaseMs: number;
  /** Default step deadline (ms); an agent's `maxStepMs` overrides it. */
  maxStepMs: number;
  /** Called after a step's `endInvocation` committed: stop the invocation's other steps everywhere. */
  onInvocationEnded: (invocationId: string) => void;
  /** Delay before a job this worker cannot run (another definition of its app) is offered again. */
  deferMs: number;
}

/** Why this process stopped one of its steps early (the reason given to its AbortController). */
const SHUTDOWN = 'SHUTDOWN';

/** The kind stored on a node row. */
export function nodeKind(agent: BaseAgent): string {
  return agent.kind;
}

/** Runs step jobs. One per engine; stateless between jobs except for in-flight abort controllers. */
export class Scheduler {
  /** Steps running in this process, by `invocationId|path`. */
  private readonly running = new Map<string, { invocationId: string; controller: AbortController }>();
  /** Invocations whose definition this worker lacks, logged once each. */
  private readonly deferredLogged = new Set<string>();

  constructor(private readonly deps: SchedulerDeps) {}

  /** Handles one job. Rejects only for failures the queue should redeliver (infrastructure, crashes). */
  async handle(job: StepJob): Promise<void> {
    const { store } = this.deps;
    const found = await getInvocationWithNode(store.db, job.invocationId, job.path);
    if (!found || TERMINAL_INVOCATION.has(found.inv.status)) return;
    const { inv, node } = found;
    const app = this.deps.apps.get(inv.app);
    if (!app || app.definitionHash !== inv.definitionHash) return this.defer(job, inv, app);
    if (!node) return;
    const agent = app.agents.get(node.agent);
    if (!agent)
      throw new AgentloomError('DEFINITION_MISMATCH', `agent "${node.agent}" is not in app "${inv.app}"`);
    if (agent instanceof WorkflowAgent) await this.advanceWorkflow(inv, node.path, agent);
    else await this.runLeaf(inv, node, agent);
  }

  /**
   * Rolling deploys: an invocation started with another definition of its app (or an app this worker does not
   * serve) is left for a worker that has it — offered again after a delay, never run against changed
   * checkpoints, never failed, never retried in a hot loop. Logged once per invocation.
   */
  private async defer(job: StepJob, inv: InvocationRow, app: RegisteredApp | undefined): Promise<void> {
    if (!this.deferredLogged.has(inv.id)) {
      this.deferredLogged.add(inv.id);
      this.log(inv, job.path).warn(
        { app: inv.app, needs: inv.definitionHash, has: app?.definitionHash ?? null },
        app
          ? 'invocation needs another definition of its app; leaving it for a worker that has it'
          : 'invocation belongs to an app this worker does not serve; leaving it for a worker that does',
      );
    }
    const redelivery = (job.redelivery ?? 0) + 1;
    const delayMs = Math.min(this.deps.deferMs * 2 ** Math.min(redelivery - 1, 4), 60_000);
    await this.deps.queue.enqueue([{ ...job, redelivery }], { delayMs });
  }

  /** Enqueues wake-ups after a commit. A failure is logged, not thrown: the commit stands and the reconciler re-wakes. */
  private async wake(jobs: NodeJobRef[], inv: InvocationRow): Promise<void> {
    if (jobs.length === 0) return;
    try {
      await this.deps.queue.enqueue(jobs.map((job) => ({ ...job, definition: inv.definitionHash })));
    } catch (err) {
      this.deps.logger.warn(
        { err, jobs: jobs.length },
        'enqueue failed; the reconciler will wake these nodes',
      );
    }
  }

  private log(inv: InvocationRow, path: string, attempt?: number): Logger {
    return this.deps.logger.child({
      invocationId: inv.id,
      nodePath: path,
      ...(attempt === undefined ? {} : { attempt }),
    });
  }

  private async advanceWorkflow(inv: InvocationRow, path: string, agent: WorkflowAgent): Promise<void> {
    const jobs = await this.deps.store.transaction(async (tx) => {
      const row = await getNode(tx, inv.id, path, true);
      if (!row || SETTLED.has(row.status as NodeStatus)) return [];
      return this.advanceInTx(tx, inv, row, agent);
    });
    await this.wake(jobs, inv);
  }

  /**
   * Advances a workflow node whose row the transaction has locked. `settled` is the child whose end triggers
   * this advance (already updated in this transaction); other children are read only when the state machine asks
   * for them (a sequence: the next one; a parallel join: its branches), so a parent does not re-read all its
   * children at every step.
   */
  private async advanceInTx(
    tx: Db,
    inv: InvocationRow,
    row: NodeRow,
    agent: WorkflowAgent,
    settled?: ChildView,
  ): Promise<NodeJobRef[]> {
    // Children read so far (null: looked up, does not exist).
    const known = new Map<string, ChildView | null>(settled ? [[settled.path, settled]] : []);
    for (;;) {
      const missed: string[] = [];
      const decision = agent.advance({
        path: row.path,
        branch: row.branch ?? undefined,
        checkpoint: row.checkpoint,
        child: (p): ChildView | undefined => {
          const view = known.get(p);
          if (view === undefined) missed.push(p);
          return view ?? undefined;
        },
      });
      // The state machine is a pure function of its inputs: when it asked for children not read yet, read just
      // those and decide again.
      if (missed.length === 0) return this.commitDecision(tx, inv, row, decision);
      const rows = await nodesAt(tx, inv.id, missed);
      for (const path of missed) known.set(path, null);
      for (const c of rows) {
        known.set(c.path, {
          path: c.path,
          status: c.status as NodeStatus,
          escalated: c.escalated,
          error: (c.error as StoredError | null) ?? undefined,
        });
      }
    }
  }

  private async commitDecision(
    tx: Db,
    inv: InvocationRow,
    row: NodeRow,
    decision: WorkflowDecision,
  ): Promise<NodeJobRef[]> {
    for (const event of decision.events) {
      await appendEventTx(tx, {
        sessionId: inv.sessionId,
        invocationId: inv.id,
        nodePath: row.path,
        branch: row.branch ?? undefined,
        event,
      });
    }
    const jobs: NodeJobRef[] = [];
    for (const start of decision.start) {
      const job = await insertNodeTx(tx, {
        invocationId: inv.id,
        path: start.path,
        parentPath: row.path,
        agent: start.agent.name,
        kind: nodeKind(start.agent),
        branch: start.branch ?? null,
      });
      if (job) jobs.push(job);
    }
    const settled = decision.status !== 'running';
    const output =
      decision.status === 'completed'
        ? ((await lastFinalText(tx, inv.sessionId, inv.id, row.path)) ?? null)
        : null;
    await updateNodeTx(tx, inv.id, row.path, {
      status: decision.status,
      checkpoint: decision.checkpoint,
      escalated: decision.escalated ?? false,
      error: (decision.error as unknown as Record<string, unknown> | undefined) ?? null,
      output,
    });
    if (settled)
      jobs.push(
        ...(await this.settleTx(tx, inv, row, decision.status, decision.escalated ?? false, decision.error)),
      );
    return jobs;
  }

  /** After a node settled: wake its parent, or end (or pause) the invocation when it is the root. */
  private async settleTx(
    tx: Db,
    inv: InvocationRow,
    row: NodeRow,
    status: string,
    escalated: boolean,
    error: StoredError | undefined,
  ): Promise<NodeJobRef[]> {
    if (row.parentPath !== null) {
      // "Child ended" and "parent advanced" commit in one transaction when the parent is a workflow node: no
      // window in which a crash leaves the parent behind its child, and no queue hop per step.
      const parent = await getNode(tx, inv.id, row.parentPath, true);
      const agent = parent && this.deps.apps.get(inv.app)?.agents.get(parent.agent);
      if (parent && agent instanceof WorkflowAgent && !SETTLED.has(parent.status as NodeStatus)) {
        return this.advanceInTx(tx, inv, parent, agent, {
          path: row.path,
          status: status as NodeStatus,
          escalated,
          error,
        });
      }
      // A leaf parent waiting on this child becomes pending (runnable, and visible to the reconciler if its
      // wake-up is lost); one still running sees the ended child when it commits (see suspendTx).
      const job = await wakeNodeTx(
        tx,
        inv.id,
        row.parentPath,
        parent?.status === 'waiting' ? 'pending' : undefined,
      );
      return job ? [job] : [];
    }
    const current = await getInvocation(tx, inv.id, true);
    if (!current || TERMINAL_INVOCATION.has(current.status)) return [];
    if (status === 'completed') {
      const output = (await lastFinalText(tx, inv.sessionId, inv.id)) ?? null;
      await setInvocationStatusTx(tx, inv.id, 'completed', { output, escalated });
    } else if (status === 'failed') {
      await setInvocationStatusTx(tx, inv.id, 'failed', {
        error: (error ?? { code: 'INTERNAL', message: 'failed' }) as unknown as Record<string, unknown>,
      });
    } else if (status === 'paused' || status === 'cancelled') {
      await setInvocationStatusTx(tx, inv.id, status);
    }
    return [];
  }

  private async runLeaf(inv: InvocationRow, node: NodeRow, agent: BaseAgent): Promise<void> {
    const { store, leaseMs, owner } = this.deps;
    const key = `${inv.id}|${node.path}`;
    // A duplicate delivery while this process runs the node: the running step owns it.
    if (this.running.has(key)) return;
    const controller = new AbortController();
    this.running.set(key, { invocationId: inv.id, controller });
    try {
      // The claim is one statement; only the first step of an invocation also marks it running (one
      // transaction). This process runs no attempt of the node now, so a lease it still holds (a step stopped by
      // a database error) may be re-claimed at once.
      const claimed =
        inv.status === 'queued'
          ? await store.transaction(async (tx) => {
              const row = await claimLeafTx(tx, inv.id, node.path, owner, leaseMs, true);
              if (row) await setInvocationStatusTx(tx, inv.id, 'running');
              return row;
            })
          : await claimLeafTx(store.db, inv.id, node.path, owner, leaseMs, true);
      if (!claimed) return;
      await this.runClaimed(inv, claimed, agent, controller);
    } finally {
      this.running.delete(key);
    }
  }

  private async runClaimed(
    inv: InvocationRow,
    claimed: NodeRow,
    agent: BaseAgent,
    controller: AbortController,
  ): Promise<void> {
    const { store, leaseMs } = this.deps;
    const log = this.log(inv, claimed.path, claimed.attempt);
    log.debug('step claimed');
    const lease = new LeaseGuard(
      () => renewLease(store.db, inv.id, claimed.path, claimed.attempt, leaseMs),
      leaseMs,
      () => controller.abort(new AgentloomError('FENCED', 'lease lost: another worker took the node over')),
    );
    const renew = setInterval(
      () => {
        lease.renew().catch((err: unknown) => log.warn({ err }, 'lease renewal failed'));
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    const maxStepMs = agent.maxStepMs ?? this.deps.maxStepMs;
    const deadline = setTimeout(() => {
      controller.abort(
        new AgentloomError(
          'TIMEOUT',
          `step of agent "${agent.name}" ran longer than maxStepMs (${maxStepMs} ms); raise maxStepMs on the agent or the engine if it needs longer`,
          { details: { nodePath: claimed.path, maxStepMs } },
        ),
      );
    }, maxStepMs);
    try {
      const [journal, state] = await Promise.all([
        // A first attempt has no journal: only claimed attempts (and answers to their pauses) write a node's events.
        claimed.attempt === 1
          ? []
          : listEvents(store.db, inv.sessionId, { invocationId: inv.id, nodePath: claimed.path }),
        readInvocationState(store.db, inv.sessionId, { temp: inv.tempState }),
      ]);
      const runtime = new EngineNodeRuntime(
        this.deps,
        inv,
        claimed,
        journal,
        state,
        controller.signal,
        lease,
      );
      let outcome: LeafOutcome | NodeSuspended;
      try {
        // Raced with the abort: a model or tool call that ignores its signal cannot hold the step past a cancel,
        // a deadline or a shutdown (whatever it does afterwards is refused: every write checks the signal and the fence).
        outcome = await raceAbort(agent.runLeaf(runtime), controller.signal);
      } catch (err) {
        const reason: unknown = controller.signal.reason;
        if (controller.signal.aborted && hasErrorCode(reason, 'TIMEOUT')) {
          outcome = { status: 'failed', error: toStoredError(reason) };
        } else if (err instanceof NodeSuspended) outcome = err;
        else if (controller.signal.aborted && reason === SHUTDOWN) return this.release(inv, claimed, log);
        else if (isQuietStop(err, controller)) return logStop(log, err, reason);
        else if (isInfrastructure(err)) throw err;
        else outcome = { status: 'failed', error: toStoredError(err) };
      }
      const status = outcome instanceof NodeSuspended ? 'waiting' : outcome.status;
      const jobs = await this.commitLeaf(inv, claimed, outcome, runtime.endRequested);
      if (!jobs) return log.info({ status }, 'step commit refused: superseded');
      // Committed: the invocation's other steps, in any process, are told to stop now (their writes are fenced anyway).
      if (runtime.endRequested && !(outcome instanceof NodeSuspended) && outcome.status === 'completed') {
        this.deps.onInvocationEnded(inv.id);
      }
      await this.wake(jobs, inv);
      log.debug({ status }, 'step committed');
    } finally {
      clearInterval(renew);
      clearTimeout(deadline);
    }
  }

  /** Gives up a step stopped by shutdown: its lease ends now and a new wake-up lets any worker take it at once. */
  private async release(inv: InvocationRow, claimed: NodeRow, log: Logger): Promise<void> {
    const job = await releaseLease(this.deps.store.db, inv.id, claimed.path, claimed.attempt);
    if (job) await this.wake([job], inv);
    log.info('step released at shutdown');
  }

  private async commitLeaf(
    inv: InvocationRow,
    claimed: NodeRow,
    outcome: LeafOutcome | NodeSuspended,
    endInvocation: boolean,
  ): Promise<NodeJobRef[] | undefined> {
    if (!(outcome instanceof NodeSuspended) && outcome.status !== 'paused') {
      return this.completeLeaf(inv, claimed, outcome, endInvocation);
    }
    return this.deps.store.transaction(async (tx) => {
      const row = await getNode(tx, inv.id, claimed.path, true);
      // Fenced: another attempt claimed the node (or it was cancelled) since this one started.
      if (!row || row.attempt !== claimed.attempt || row.status !== 'running') return undefined;
      if (outcome instanceof NodeSuspended) return this.suspendTx(tx, inv, row, outcome);
      if (outcome.status === 'paused') {
        await insertToolRequestsTx(
          tx,
          outcome.requests.map((r) => ({
            invocationId: inv.id,
            callId: r.callId,
            nodePath: row.path,
            kind: r.kind,
            status: 'pending',
            request: {
              name: r.name,
              args: r.args,
              hint: r.hint,
              payload: r.payload,
              originalCallId: r.originalCallId,
              branch: row.branch,
            } as Record<string, unknown>,
          })),
        );
        // Answered while this attempt ran (its journal predates the answer): run again instead of pausing.
        if (
          await anyAnswered(
            tx,
            inv.id,
            outcome.requests.map((r) => r.callId),
          )
        ) {
          const job = await wakeNodeTx(tx, inv.id, row.path, 'pending');
          return job ? [job] : [];
        }
        if (outcome.requests.length === 0 && (await this.childResumed(tx, inv.id, row.path))) {
          const job = await wakeNodeTx(tx, inv.id, row.path, 'pending');
          return job ? [job] : [];
        }
      }
      await updateNodeTx(tx, inv.id, row.path, {
        status: 'paused',
        escalated: false,
        output: null,
        error: null,
        leaseOwner: null,
        leaseExpiresAt: null,
      });
      return this.settleTx(tx, inv, row, 'paused', false, undefined);
    });
  }

  /**
   * Commits a completed or failed leaf and advances its parent in one transaction. The fenced status change is
   * one conditional UPDATE (it also takes the row lock): nothing is written when another attempt superseded this
   * one.
   */
  private async completeLeaf(
    inv: InvocationRow,
    claimed: NodeRow,
    outcome: Exclude<LeafOutcome, { status: 'paused' }>,
    endInvocation: boolean,
  ): Promise<NodeJobRef[] | undefined> {
    const escalated = outcome.status === 'completed' ? (outcome.escalated ?? false) : false;
    const error = outcome.status === 'failed' ? outcome.error : undefined;
    const output = outcome.status === 'completed' ? (outcome.output ?? null) : null;
    return this.deps.store.transaction(async (tx) => {
      const row = await settleLeafTx(tx, inv.id, claimed.path, claimed.attempt, {
        status: outcome.status,
        escalated,
        output,
        error: (error as unknown as Record<string, unknown> | undefined) ?? null,
      });
      if (!row) return undefined;
      if (endInvocation && outcome.status === 'completed') return this.endInvocationTx(tx, inv);
      return this.settleTx(tx, inv, row, outcome.status, escalated, error);
    });
  }

  /** A paused AgentTool / transfer child that is no longer paused (answered meanwhile). */
  private async childResumed(tx: Db, invocationId: string, path: string): Promise<boolean> {
    const children = await childNodes(tx, invocationId, path);
    return children.some((c) => c.status !== 'paused');
  }

  private async suspendTx(
    tx: Db,
    inv: InvocationRow,
    row: NodeRow,
    suspended: NodeSuspended,
  ): Promise<NodeJobRef[]> {
    const app = this.deps.apps.get(inv.app) as RegisteredApp;
    const jobs: NodeJobRef[] = [];
    for (const child of suspended.children) {
      const agent = app.agents.get(child.agent);
      if (!agent) throw new AgentloomError('NOT_FOUND', `agent "${child.agent}" is not in app "${inv.app}"`);
      const job = await insertNodeTx(tx, {
        invocationId: inv.id,
        path: child.path,
        parentPath: row.path,
        agent: agent.name,
        kind: nodeKind(agent),
        branch: child.branch ?? null,
      });
      if (job) jobs.push(job);
    }
    // A child that ended while this attempt ran woke a node that was still running: run again now.
    const children = await childNodes(tx, inv.id, row.path);
    const ready = children.some((c) => SETTLED.has(c.status as NodeStatus) && c.status !== 'paused');
    const job = await wakeNodeTx(tx, inv.id, row.path, ready ? 'pending' : 'waiting');
    await updateNodeTx(tx, inv.id, row.path, { leaseOwner: null, leaseExpiresAt: null });
    if (ready && job) jobs.push(job);
    return jobs;
  }

  /** `endInvocation`: every unfinished node is cancelled and the invocation completes now. */
  private async endInvocationTx(tx: Db, inv: InvocationRow): Promise<NodeJobRef[]> {
    for (const node of await invocationNodes(tx, inv.id)) {
      if (!SETTLED.has(node.status as NodeStatus) || node.status === 'paused') {
        await updateNodeTx(tx, inv.id, node.path, {
          status: 'cancelled',
          leaseOwner: null,
          leaseExpiresAt: null,
        });
      }
    }
    await cancelToolRequestsTx(tx, inv.id);
    const output = (await lastFinalText(tx, inv.sessionId, inv.id)) ?? null;
    await setInvocationStatusTx(tx, inv.id, 'completed', { output });
    return [];
  }

  /** Aborts the in-flight steps of an invocation in this process (model and tool calls see `signal`). */
  abort(
    invocationId: string,
    reason: unknown = new AgentloomError('CANCELLED', 'the invocation was cancelled'),
  ): void {
    for (const step of this.running.values()) {
      if (step.invocationId === invocationId) step.controller.abort(reason);
    }
  }

  /** Aborts every in-flight step (abrupt close). */
  abortAll(): void {
    for (const step of this.running.values()) {
      step.controller.abort(new AgentloomError('CANCELLED', 'the engine was closed'));
    }
  }

  /** Stops every in-flight step and releases its lease so another worker takes it over at once (shutdown). */
  releaseAll(): void {
    for (const step of this.running.values()) step.controller.abort(SHUTDOWN);
  }

  /** How many steps this process is running. */
  get runningSteps(): number {
    return this.running.size;
  }
}

/** Logs why a step stopped without an outcome: superseded (a zombie's attempt) is worth a warning. */
function logStop(log: Logger, err: unknown, reason: unknown): void {
  if (hasErrorCode(reason, 'FENCED') || hasErrorCode(err, 'FENCED')) {
    log.warn({ err }, 'step superseded: another worker took the node over; this attempt writes nothing more');
  } else {
    log.info(
      { reason: (reason as Error | undefined)?.message },
      'step stopped: the invocation was cancelled or ended',
    );
  }
}

/** Settles with `work`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}

function isQuietStop(err: unknown, controller: AbortController): boolean {
  if (controller.signal.aborted) return true;
  return err instanceof AgentloomError && (err.code === 'FENCED' || err.code === 'CANCELLED');
}

/** Errors of the machinery (database unreachable, a simulated crash) rather than of the agent: redeliver. */
function isInfrastructure(err: unknown): boolean {
  return isInfrastructureError(err);
}
