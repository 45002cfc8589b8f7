/**
 * Executing a step (ARCHITECTURE.md): a job names a node; a workflow node advances its state machine in one
 * transaction; a leaf node is claimed (fencing attempt + lease), run, and committed as completed / paused /
 * waiting / failed in one transaction that also advances its workflow parent (or wakes a leaf parent), so
 * "child ended" and "parent advanced" are never apart. Postgres decides; the queue only wakes.
 */
import type { Logger } from 'pino';
import type { BaseAgent } from '../agents/base-agent.js';
import { NodeSuspended, type LeafOutcome } from '../agents/context.js';
import { ParallelAgent } from '../agents/parallel-agent.js';
import { Batcher } from '../core/batcher.js';
import {
  SETTLED,
  WorkflowAgent,
  type ChildStart,
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
import { textOf, type Content } from '../core/content.js';
import { isFinalResponse, type Event } from '../core/event.js';
import { jobId, type StepJob, type StepQueue } from '../queue/step-queue.js';
import type { Db } from '../store/database.js';
import {
  appendEventTx,
  appendPlainPrepared,
  lastFinalText,
  listEvents,
  prepareEvent,
  type PreparedEvent,
} from '../store/events.js';
import {
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
  updateNodeTx,
  wakeNodeTx,
  type NodeJobRef,
  type NodeRow,
} from '../store/nodes.js';
import { readInvocationState } from '../store/sessions.js';
import {
  advanceIfUnchanged,
  advanceNodeTx,
  claimForJob,
  claimForJobs,
  type ClaimRequest,
  type JobClaim,
  completeAndAdvance,
  completeBranches,
  endAndAdvanceParent,
  endAndWakeParent,
  type EventInsert,
  type ParentBranchEnd,
  type CompleteBranch,
  eventInsertOf,
  settleLeafLockParentTx,
  type AdvanceInput,
  type AdvanceResult,
  type ChildInsert,
} from '../store/steps.js';
import { isRetryableSqlError } from '../store/tx.js';
import type { Store } from '../store/store.js';
import { anyAnswered, cancelToolRequestsTx, insertToolRequestsTx } from '../store/tool-requests.js';
import { EngineNodeRuntime, LeaseGuard, type NodeRuntimeDeps } from './node-runtime.js';
import type { StepRun } from './observer.js';
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
  /** Told how each claimed step ended (metrics). Must not throw. */
  observeStep?: (run: StepRun) => void;
}

/** Why this process stopped one of its steps early (the reason given to its AbortController). */
const SHUTDOWN = 'SHUTDOWN';
/** Delay before a continued step stopped by a fault is offered again. */
const REDELIVERY_DELAY_MS = 100;

type Json = Record<string, unknown>;

/**
 * The next leaf of a sequence, claimed by this worker in the transaction that made it runnable (ARCHITECTURE
 * "sequential continuation"): it runs here at once, with no queue hop and no separate claim. Its wake-up still
 * goes through the queue, delayed by a lease, so a crash of this worker is recovered like any other.
 */
interface Continuation extends Known {
  node: NodeRow;
}

/** What a claimed step already knows from the statement that claimed it, so it need not read it again. */
interface Known {
  /** The state the step sees. */
  state: Json;
  /** The parent as that statement left it: lets the completion advance it in the same statement. */
  parent?: ParentInfo;
  /** When the claim's lease started (Date.now()), when it is not now. */
  leasedAt?: number;
}

/**
 * A job's hint (StepJob.hint) from this process: the invocation and the workflow node it just created or made
 * runnable (the node as written, when known), so the job advances it without reading it first.
 */
export interface JobHint {
  inv: InvocationRow;
  agent: string;
  node?: NodeRow;
  /**
   * A parallel join's output when it completes, known from the batch of branch ends that settled its last
   * branch (that batch stored the newest events under it): the join then needs no read of its events.
   */
  output?: string;
  /** The node's parent as the batch that made the join runnable read it (a join then ends and advances in one). */
  parent?: NodeRow;
  /**
   * A leaf this process claimed in the statement that created it (a fan-out's branch, see
   * {@link Scheduler.fanClaims}): the job runs it without a claim of its own, while the claim is fresh.
   */
  claimed?: Known & { at: number };
}

const WORKFLOW_KINDS: ReadonlySet<string> = new Set(['sequential', 'parallel', 'loop']);

/** A branch's end as the batcher answers it: with the join's output when known (see {@link JobHint.output}). */
type BranchOutcome = (CompleteBranch & { output?: string }) | 'retry';

/** A workflow parent as a step last saw it. */
interface ParentInfo {
  path: string;
  agent: string;
  branch: string | null;
  checkpoint: Json;
}

const parentInfo = (row: NodeRow | undefined): ParentInfo | undefined =>
  row && { path: row.path, agent: row.agent, branch: row.branch, checkpoint: row.checkpoint };

/** How a claimed step ended: whether its outcome committed, and the leaf it continued into. */
interface StepResult {
  committed: boolean;
  next?: Continuation;
}

/** Whether a transaction may claim the next leaf for this worker, and the one it claimed. */
interface ContinuationSlot {
  allow: boolean;
  taken?: Continuation;
}

/** A step in this process: stopped through its controller; `done` settles when it ends. */
interface LocalStep {
  invocationId: string;
  controller: AbortController;
  done: Promise<void>;
}

/** Job ids of continued steps that committed here, so their delayed recovery wake-ups cost no query. */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max: number) {}
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value as string);
  }
  /** True (once) when `id` was added. */
  take(id: string): boolean {
    return this.ids.delete(id);
  }
}

const stepKey = (invocationId: string, path: string) => `${invocationId}|${path}`;

/** The kind stored on a node row. */
export function nodeKind(agent: BaseAgent): string {
  return agent.kind;
}

/** Runs step jobs. One per engine; stateless between jobs except for in-flight abort controllers. */
export class Scheduler {
  /** Steps running in this process, by `invocationId|path`. */
  private readonly running = new Map<string, LocalStep>();
  /** Invocations whose definition this worker lacks, logged once each. */
  private readonly deferredLogged = new Set<string>();
  private readonly committedHere = new RecentIds(4096);
  private appsByHash: Map<string, RegisteredApp> | undefined;
  /** Set at shutdown: no new continuation is claimed. */
  private stopping = false;
  /** Claims carried by job hints that a delivery already used (a redelivery claims again). */
  private readonly usedClaims = new WeakSet<object>();

  /** Claims of jobs that arrive together (a fan-out's) go to the database as one statement. */
  private readonly claims = new Batcher<0, ClaimRequest, JobClaim | undefined>((_, requests) =>
    this.claimBatch(requests),
  );

  /**
   * Ends of branches of one parallel parent that finish together go to the database as one statement (the parent's
   * row lock is taken once for them all, not once per branch in turn).
   */
  private readonly branchEnds = new Batcher<string, ParentBranchEnd, BranchOutcome>(async (_, requests) => {
    const { invocationId, sessionId, parentPath } = requests[0] as ParentBranchEnd;
    try {
      const results = await completeBranches(this.deps.store.db, {
        invocationId,
        sessionId,
        parentPath,
        branches: requests,
      });
      // The join's output: the newest event under the parent is the last one this batch stored (every other
      // branch had settled before it), if that one is a final response with text; otherwise unknown.
      let last: EventInsert | undefined;
      results.forEach((r, i) => {
        const event = (requests[i] as ParentBranchEnd).event;
        if (r.outcome === 'done' && event) last = event;
      });
      const output = last ? finalTextOf(last) : undefined;
      return results.map((r) =>
        output !== undefined && r.outcome === 'done' && r.join ? { ...r, output } : r,
      );
    } catch (err) {
      // A deadlock: nothing was written; each branch takes the general path.
      if (isRetryableSqlError(err)) return requests.map(() => 'retry' as const);
      throw err;
    }
  });

  constructor(private readonly deps: SchedulerDeps) {}

  private async claimBatch(requests: ClaimRequest[]): Promise<(JobClaim | undefined)[]> {
    const { store, owner, leaseMs } = this.deps;
    const one = (r: ClaimRequest) => claimForJob(store.db, { ...r, owner, leaseMs, reclaimOwn: true });
    if (requests.length === 1) return [await one(requests[0] as ClaimRequest)];
    try {
      return await claimForJobs(store.db, owner, leaseMs, requests);
    } catch (err) {
      // A deadlock with another writer of these nodes: nothing was written; claim them one by one.
      if (isRetryableSqlError(err)) return Promise.all(requests.map(one));
      throw err;
    }
  }

  /** Handles one job. Rejects only for failures the queue should redeliver (infrastructure, crashes). */
  async handle(job: StepJob): Promise<void> {
    // A wake-up for a node this process is running (a duplicate delivery, or the recovery wake-up of a step it
    // continued into): the running step owns the node, and the job stays active until it ends (so the queue's
    // stall detection covers it).
    const local = this.running.get(stepKey(job.invocationId, job.path));
    if (local) return local.done;
    if (this.committedHere.take(jobId(job))) return;
    const app = job.definition === undefined ? undefined : this.appForHash(job.definition);
    if (!app) return this.handleUntagged(job);
    // A workflow node this process just created or made runnable: advanced without a first read (its writes are
    // guarded, so a stale hint only costs the normal path).
    const hint = job.hint as JobHint | undefined;
    if (hint && hint.inv.id === job.invocationId && hint.inv.definitionHash === app.definitionHash) {
      const agent = app.agents.get(hint.agent);
      if (agent instanceof WorkflowAgent) {
        return this.advanceWorkflow(hint.inv, job.path, agent, hint.node, hint.output, hint.parent);
      }
      const claimed = this.takeClaim(hint);
      if (agent && claimed && hint.node) {
        const step = this.track(job.invocationId, job.path);
        return this.runChain(hint.inv, hint.node, agent, step, claimed);
      }
    }
    // One statement: the invocation, the node, and for a runnable leaf its claim and the state it sees.
    const step = this.track(job.invocationId, job.path);
    let claim: JobClaim | undefined;
    try {
      claim = await this.claims.submit(0, {
        invocationId: job.invocationId,
        path: job.path,
        definitionHash: app.definitionHash,
      });
    } catch (err) {
      step.finish();
      throw err;
    }
    if (!claim?.node || !claim.claimed) step.finish();
    if (!claim || TERMINAL_INVOCATION.has(claim.inv.status)) return;
    const { inv, node } = claim;
    if (inv.definitionHash !== app.definitionHash) return this.defer(job, inv, this.deps.apps.get(inv.app));
    if (!node) return;
    let agent: BaseAgent;
    try {
      agent = this.agentOf(inv, node);
    } catch (err) {
      step.finish();
      throw err;
    }
    if (claim.claimed) {
      const known = { state: claim.state ?? {}, parent: parentInfo(claim.parent) };
      return this.runChain(inv, node, agent, step, known);
    }
    if (agent instanceof WorkflowAgent) return this.advanceWorkflow(inv, node.path, agent, node);
  }

  /** A job without a definition tag (or of a definition this worker lacks): read first, then decide. */
  private async handleUntagged(job: StepJob): Promise<void> {
    const found = await getInvocationWithNode(this.deps.store.db, job.invocationId, job.path);
    if (!found || TERMINAL_INVOCATION.has(found.inv.status)) return;
    const { inv, node } = found;
    const app = this.deps.apps.get(inv.app);
    if (!app || app.definitionHash !== inv.definitionHash) return this.defer(job, inv, app);
    if (!node) return;
    const agent = this.agentOf(inv, node);
    if (agent instanceof WorkflowAgent) await this.advanceWorkflow(inv, node.path, agent);
    else await this.runLeaf(inv, node, agent);
  }

  /**
   * The claim a job's hint carries, used once, and only while fresh: a job that waited in the queue past a
   * quarter of the lease claims its node again the usual way (its own lease is re-claimable, with a new attempt).
   */
  private takeClaim(hint: JobHint): Known | undefined {
    const claimed = hint.claimed;
    if (!claimed || this.usedClaims.has(claimed)) return undefined;
    this.usedClaims.add(claimed);
    if (this.stopping || Date.now() - claimed.at > this.deps.leaseMs / 4) return undefined;
    return {
      state: claimed.state,
      leasedAt: claimed.at,
      ...(claimed.parent ? { parent: claimed.parent } : {}),
    };
  }

  private appForHash(hash: string): RegisteredApp | undefined {
    this.appsByHash ??= new Map([...this.deps.apps.values()].map((app) => [app.definitionHash, app]));
    return this.appsByHash.get(hash);
  }

  private agentOf(inv: InvocationRow, node: NodeRow): BaseAgent {
    const agent = this.deps.apps.get(inv.app)?.agents.get(node.agent);
    if (!agent)
      throw new AgentloomError('DEFINITION_MISMATCH', `agent "${node.agent}" is not in app "${inv.app}"`);
    return agent;
  }

  /** Registers a step of this process; `finish` must be called when it ends. */
  private track(invocationId: string, path: string): LocalStep & { finish: () => void } {
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

  /**
   * Runs a claimed leaf, then each leaf this worker continued into (claimed in the commit of the one before).
   * Each step is tracked from before its claim to its end.
   */
  private async runChain(
    inv: InvocationRow,
    node: NodeRow,
    agent: BaseAgent,
    step: LocalStep & { finish: () => void },
    known: Known | undefined,
    continued = false,
  ): Promise<void> {
    let current:
      | { node: NodeRow; agent: BaseAgent; step: typeof step; known: Known | undefined; continued?: boolean }
      | undefined = { node, agent, step, known, continued };
    while (current) {
      let result: StepResult;
      try {
        result = await this.runClaimed(
          inv,
          current.node,
          current.agent,
          current.step.controller,
          current.known,
        );
      } catch (err) {
        // A continued step is not the job's own node: a fault of the machinery redelivers its own wake-up.
        if (!current.continued) throw err;
        return await this.redeliver(inv, current.node, err);
      } finally {
        current.step.finish();
      }
      if (result.committed && current.continued) {
        const { path, wake } = current.node;
        this.committedHere.add(jobId({ invocationId: inv.id, path, wake }));
      }
      if (!result.next) return;
      const next = await this.continueWith(inv, result.next);
      current = next && { ...next, continued: true };
    }
  }

  /**
   * A continued step stopped by a fault of the machinery (database, a crash): its wake-up goes through the queue
   * now, as a redelivery, and this worker (or another) re-claims it. When even that fails, the error goes to the
   * job's own redelivery and the reconciler wakes the node once its lease lapses.
   */
  private async redeliver(inv: InvocationRow, node: NodeRow, err: unknown): Promise<void> {
    this.log(inv, node.path, node.attempt).warn({ err }, 'continued step failed; redelivering its wake-up');
    try {
      await this.deps.queue.enqueue(
        [
          {
            invocationId: inv.id,
            path: node.path,
            wake: node.wake,
            redelivery: 1,
            definition: inv.definitionHash,
          },
        ],
        { delayMs: REDELIVERY_DELAY_MS },
      );
    } catch {
      throw err;
    }
  }

  /** Takes over a continuation: tracked, its recovery wake-up queued; released instead when shutting down. */
  private async continueWith(
    inv: InvocationRow,
    next: Continuation,
  ): Promise<
    { node: NodeRow; agent: BaseAgent; step: ReturnType<Scheduler['track']>; known: Known } | undefined
  > {
    const step = this.track(inv.id, next.node.path);
    const recovery = { invocationId: inv.id, path: next.node.path, wake: next.node.wake };
    if (this.stopping) {
      step.finish();
      await this.release(inv, next.node, this.log(inv, next.node.path, next.node.attempt));
      return undefined;
    }
    // Not awaited: it is due only a lease from now, so the step need not wait for the queue's round trip. A queue
    // kept in PostgreSQL gets none: there a wake-up is itself a durable write per step, and the reconciler (a query
    // over the same database) already wakes a leaf whose lease lapsed. Nor does the in-process queue: it dies with
    // this process, so its wake-up could never recover this process's crash (the reconciler does, at restart or in
    // another process over the same database).
    if (this.deps.queue.kind === 'redis') {
      this.deps.queue
        .enqueue([{ ...recovery, definition: inv.definitionHash }], { delayMs: this.deps.leaseMs })
        .catch((err: unknown) =>
          this.deps.logger.warn(
            { err },
            'enqueue failed; the reconciler will recover this step if it is lost',
          ),
        );
    }
    return { node: next.node, agent: this.agentOf(inv, next.node), step, known: next };
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

  private async advanceWorkflow(
    inv: InvocationRow,
    path: string,
    agent: WorkflowAgent,
    seen?: NodeRow,
    output?: string,
    parent?: NodeRow,
  ): Promise<void> {
    const slot: ContinuationSlot = { allow: !this.stopping };
    if (seen && !SETTLED.has(seen.status as NodeStatus)) {
      const fast =
        (output !== undefined
          ? await this.endInOneStatement(inv, seen, agent, output, slot, parent)
          : undefined) ?? (await this.advanceInOneStatement(inv, seen, agent, slot));
      if (fast) {
        await this.wake(fast, inv);
        if (slot.taken) await this.runContinuation(inv, slot.taken);
        return;
      }
    }
    const jobs = await this.deps.store.transaction(async (tx) => {
      slot.taken = undefined;
      const row = await getNode(tx, inv.id, path, true);
      if (!row || SETTLED.has(row.status as NodeStatus)) return [];
      return this.advanceInTx(tx, inv, row, agent, undefined, slot);
    });
    await this.wake(jobs, inv);
    if (slot.taken) await this.runContinuation(inv, slot.taken);
  }

  /** Runs a leaf claimed by a workflow job's advance (and the chain after it). */
  private async runContinuation(inv: InvocationRow, next: Continuation): Promise<void> {
    const first = await this.continueWith(inv, next);
    if (!first) return;
    await this.runChain(inv, first.node, first.agent, first.step, first.known, true);
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
    slot?: ContinuationSlot,
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
      if (missed.length === 0) return this.commitDecision(tx, inv, row, decision, slot);
      for (const path of missed) known.set(path, null);
      const unknown = missed.filter((path) => !agent.notStarted(row.checkpoint, path));
      const rows = unknown.length > 0 ? await nodesAt(tx, inv.id, unknown) : [];
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
    slot?: ContinuationSlot,
  ): Promise<NodeJobRef[]> {
    const prepared = this.prepareDecisionEvents(inv, row, decision);
    // Checkpoint and end events change no state: written with the advance, in its statement. Anything else
    // (never produced by the built-in workflow agents) takes the general path.
    const batched = prepared.every((p) => !p.changesState);
    if (!batched) {
      for (const event of decision.events) {
        await appendEventTx(tx, {
          sessionId: inv.sessionId,
          invocationId: inv.id,
          nodePath: row.path,
          branch: row.branch ?? undefined,
          event,
        });
      }
    }
    const settled = decision.status !== 'running';
    const output =
      decision.status === 'completed'
        ? ((await lastFinalText(tx, inv.sessionId, inv.id, row.path)) ?? null)
        : null;
    const result = await advanceNodeTx(
      tx,
      this.advanceInput(inv, row, decision, batched ? prepared : [], output, slot),
    );
    const jobs = this.afterAdvance(inv, row, decision, result, slot);
    if (settled)
      jobs.push(
        ...(await this.settleTx(
          tx,
          inv,
          row,
          decision.status,
          decision.escalated ?? false,
          decision.error,
          slot,
          undefined,
          output,
        )),
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
    slot?: ContinuationSlot,
    lockedParent?: NodeRow | null,
    rootOutput?: string | null,
  ): Promise<NodeJobRef[]> {
    if (row.parentPath !== null) {
      // "Child ended" and "parent advanced" commit in one transaction when the parent is a workflow node: no
      // window in which a crash leaves the parent behind its child, and no queue hop per step.
      const parent =
        lockedParent === undefined
          ? await getNode(tx, inv.id, row.parentPath, true)
          : (lockedParent ?? undefined);
      const agent = parent && this.deps.apps.get(inv.app)?.agents.get(parent.agent);
      if (parent && agent instanceof WorkflowAgent && !SETTLED.has(parent.status as NodeStatus)) {
        return this.advanceInTx(
          tx,
          inv,
          parent,
          agent,
          { path: row.path, status: status as NodeStatus, escalated, error },
          slot,
        );
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
    // The root ended: so does the invocation, unless it already ended (cancelled meanwhile), which the update's
    // condition checks under the invocation's row lock.
    const unlessEnded = { unlessEnded: true };
    if (status === 'completed') {
      // Every agent event of an invocation is under its root's path: the root's output is the invocation's.
      const output =
        rootOutput !== undefined ? rootOutput : ((await lastFinalText(tx, inv.sessionId, inv.id)) ?? null);
      await setInvocationStatusTx(tx, inv.id, 'completed', { output, escalated }, unlessEnded);
    } else if (status === 'failed') {
      await setInvocationStatusTx(
        tx,
        inv.id,
        'failed',
        { error: (error ?? { code: 'INTERNAL', message: 'failed' }) as unknown as Record<string, unknown> },
        unlessEnded,
      );
    } else if (status === 'paused' || status === 'cancelled') {
      await setInvocationStatusTx(tx, inv.id, status, {}, unlessEnded);
    }
    return [];
  }

  private async runLeaf(inv: InvocationRow, node: NodeRow, agent: BaseAgent): Promise<void> {
    const { store, leaseMs, owner } = this.deps;
    // A duplicate delivery while this process runs the node: the running step owns it.
    if (this.running.has(stepKey(inv.id, node.path))) return;
    const step = this.track(inv.id, node.path);
    let claimed: NodeRow | undefined;
    try {
      // This process runs no attempt of the node now, so a lease it still holds (a step stopped by a database
      // error) may be re-claimed at once.
      claimed =
        inv.status === 'queued'
          ? await store.transaction(async (tx) => {
              const row = await claimLeafTx(tx, inv.id, node.path, owner, leaseMs, true);
              if (row) await setInvocationStatusTx(tx, inv.id, 'running');
              return row;
            })
          : await claimLeafTx(store.db, inv.id, node.path, owner, leaseMs, true);
    } finally {
      if (!claimed) step.finish();
    }
    if (claimed) await this.runChain(inv, claimed, agent, step, undefined);
  }

  private async runClaimed(
    inv: InvocationRow,
    claimed: NodeRow,
    agent: BaseAgent,
    controller: AbortController,
    known: Known | undefined,
  ): Promise<StepResult> {
    const { store, leaseMs } = this.deps;
    const log = this.log(inv, claimed.path, claimed.attempt);
    log.debug('step claimed');
    const started = performance.now();
    const report = (outcome: StepRun['outcome']): void =>
      this.deps.observeStep?.({
        invocationId: inv.id,
        path: claimed.path,
        agent: claimed.agent,
        attempt: claimed.attempt,
        outcome,
        durationMs: performance.now() - started,
      });
    const lease = new LeaseGuard(
      () => renewLease(store.db, inv.id, claimed.path, claimed.attempt, leaseMs),
      leaseMs,
      () => controller.abort(new AgentloomError('FENCED', 'lease lost: another worker took the node over')),
      known?.leasedAt,
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
    let runtime: EngineNodeRuntime | undefined;
    try {
      const [journal, state] = await Promise.all([
        // A first attempt has no journal: only claimed attempts (and answers to their pauses) write a node's events.
        claimed.attempt === 1
          ? []
          : listEvents(store.db, inv.sessionId, { invocationId: inv.id, nodePath: claimed.path }),
        known?.state ?? readInvocationState(store.db, inv.sessionId, { temp: inv.tempState }),
      ]);
      runtime = new EngineNodeRuntime(this.deps, inv, claimed, journal, state, controller.signal, lease);
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
        else if (controller.signal.aborted && reason === SHUTDOWN) {
          await this.release(inv, claimed, log);
          report('released');
          return { committed: false };
        } else if (isQuietStop(err, controller)) {
          logStop(log, err, reason);
          report(isSuperseded(err, reason) ? 'superseded' : 'stopped');
          return { committed: false };
        } else if (isInfrastructure(err)) throw err;
        else outcome = { status: 'failed', error: toStoredError(err) };
      }
      const status = outcome instanceof NodeSuspended ? 'waiting' : outcome.status;
      const slot: ContinuationSlot = { allow: !this.stopping && !controller.signal.aborted };
      // The custom agent's last event, if not stored yet: it commits with the step's completion.
      const leafEvent = await runtime.takeDeferred();
      const jobs = await this.commitLeaf(
        inv,
        claimed,
        outcome,
        runtime.endRequested,
        slot,
        known?.parent,
        leafEvent,
      );
      if (!jobs) {
        log.info({ status }, 'step commit refused: superseded');
        report('superseded');
        return { committed: false };
      }
      report(status as StepRun['outcome']);
      // Committed: the invocation's other steps, in any process, are told to stop now (their writes are fenced anyway).
      if (runtime.endRequested && !(outcome instanceof NodeSuspended) && outcome.status === 'completed') {
        this.deps.onInvocationEnded(inv.id);
      }
      await this.wake(jobs, inv);
      log.debug({ status }, 'step committed');
      return { committed: true, ...(slot.taken ? { next: slot.taken } : {}) };
    } finally {
      runtime?.discardDeferred();
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
    slot: ContinuationSlot,
    parent: ParentInfo | undefined,
    leafEvent: PreparedEvent | undefined,
  ): Promise<NodeJobRef[] | undefined> {
    if (!(outcome instanceof NodeSuspended) && outcome.status !== 'paused') {
      return this.completeLeaf(inv, claimed, outcome, endInvocation, slot, parent, leafEvent);
    }
    return this.deps.store.transaction(async (tx) => {
      const row = await getNode(tx, inv.id, claimed.path, true);
      // Fenced: another attempt claimed the node (or it was cancelled) since this one started.
      if (!row || row.attempt !== claimed.attempt || row.status !== 'running') return undefined;
      if (leafEvent) await appendPlainPrepared(tx, leafEvent);
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
    slot: ContinuationSlot,
    parent: ParentInfo | undefined,
    leafEvent: PreparedEvent | undefined,
  ): Promise<NodeJobRef[] | undefined> {
    const escalated = outcome.status === 'completed' ? (outcome.escalated ?? false) : false;
    const error = outcome.status === 'failed' ? outcome.error : undefined;
    const output = outcome.status === 'completed' ? (outcome.output ?? null) : null;
    const fields = {
      status: outcome.status,
      escalated,
      output,
      error: (error as unknown as Record<string, unknown> | undefined) ?? null,
    };
    if (parent && !endInvocation) {
      const view: ChildView = { path: claimed.path, status: outcome.status, escalated, error };
      const fast = await this.completeInOneStatement(inv, claimed, fields, view, parent, slot, leafEvent);
      if (fast !== 'general') return fast;
    }
    return this.deps.store.transaction(async (tx) => {
      slot.taken = undefined;
      // The leaf's last event first (fenced: FENCED here means superseded, and nothing was written).
      if (leafEvent && !(await this.storeLeafEventTx(tx, leafEvent, claimed))) return undefined;
      // One statement: the fenced status change (it also takes the row lock) and the parent's row lock.
      const settled = await settleLeafLockParentTx(tx, inv.id, claimed.path, claimed.attempt, {
        status: outcome.status,
        escalated,
        output,
        error: (error as unknown as Record<string, unknown> | undefined) ?? null,
      });
      if (!settled) return undefined;
      if (endInvocation && outcome.status === 'completed') return this.endInvocationTx(tx, inv);
      return this.settleTx(
        tx,
        inv,
        settled.node,
        outcome.status,
        escalated,
        error,
        slot,
        settled.parent ?? null,
      );
    });
  }

  /**
   * The decision of workflow `agent` at `node`'s checkpoint when it needs no child it would have to read: only
   * `settled` (a child whose end the caller knows) and children the checkpoint proves unstarted. Undefined when
   * it would need another child, or when it ends the node (ending reads the node's events and may end the
   * invocation: the transactional path).
   */
  private decideUnread(
    agent: WorkflowAgent,
    node: { path: string; branch: string | null; checkpoint: Json },
    settled?: ChildView,
    allowEnd = false,
  ): WorkflowDecision | undefined {
    let unknown = false;
    const decision = agent.advance({
      path: node.path,
      branch: node.branch ?? undefined,
      checkpoint: node.checkpoint,
      child: (path) => {
        if (path === settled?.path) return settled;
        const recorded = agent.childInCheckpoint(node.checkpoint, path);
        if (recorded) return recorded;
        if (!agent.notStarted(node.checkpoint, path)) unknown = true;
        return undefined;
      },
    });
    if (unknown || (decision.status !== 'running' && !allowEnd)) return undefined;
    return decision;
  }

  /**
   * A workflow job's first look without a transaction: the decision from the checkpoint the job's claim statement
   * read, committed in one statement only if the node is still exactly as read (see {@link advanceIfUnchanged}).
   * Undefined when that does not apply or the node changed meanwhile: the caller takes the transactional path.
   */
  private async advanceInOneStatement(
    inv: InvocationRow,
    node: NodeRow,
    agent: WorkflowAgent,
    slot: ContinuationSlot,
  ): Promise<NodeJobRef[] | undefined> {
    const decision = this.decideUnread(agent, node);
    if (!decision) return undefined;
    const prepared = this.prepareDecisionEvents(inv, node, decision);
    if (prepared.some((p) => p.changesState)) return undefined;
    try {
      const result = await advanceIfUnchanged(this.deps.store.db, {
        expectedStatus: node.status,
        expectedCheckpoint: node.checkpoint,
        advance: this.advanceInput(inv, node, decision, prepared, null, slot),
      });
      if (result.outcome === 'stale') return undefined;
      return this.afterAdvance(inv, node, decision, result.advance, slot);
    } catch (err) {
      // A deadlock with a concurrent writer of the same nodes: nothing was written; the transactional path retries.
      if (isRetryableSqlError(err)) return undefined;
      throw err;
    }
  }

  /**
   * A workflow node's end without a transaction, when its checkpoint alone decides that it completes (a parallel
   * join whose branches all completed) and its output is known: one statement ends it and makes its parent
   * runnable, a second advances the parent from the row the first returned (both guarded, see
   * {@link endAndWakeParent} and {@link advanceIfUnchanged}). Undefined when that does not apply or the node
   * changed meanwhile: the caller takes its usual path. A root node ends the invocation: the usual path.
   */
  private async endInOneStatement(
    inv: InvocationRow,
    node: NodeRow,
    agent: WorkflowAgent,
    output: string,
    slot: ContinuationSlot,
    knownParent?: NodeRow,
  ): Promise<NodeJobRef[] | undefined> {
    if (node.parentPath === null) return undefined;
    const decision = this.decideUnread(agent, node, undefined, true);
    if (decision?.status !== 'completed') return undefined;
    const prepared = this.prepareDecisionEvents(inv, node, decision);
    if (prepared.some((p) => p.changesState)) return undefined;
    if (knownParent?.path === node.parentPath && knownParent.status === 'running') {
      const merged = await this.endAndAdvance(inv, node, decision, prepared, output, knownParent, slot);
      if (merged) return merged;
    }
    let ended: Awaited<ReturnType<typeof endAndWakeParent>>;
    try {
      ended = await endAndWakeParent(this.deps.store.db, {
        expectedStatus: node.status,
        expectedCheckpoint: node.checkpoint,
        parentPath: node.parentPath,
        advance: this.advanceInput(inv, node, decision, prepared, output, undefined),
      });
    } catch (err) {
      if (isRetryableSqlError(err)) return undefined;
      throw err;
    }
    if (ended.outcome === 'stale') return undefined;
    // Ended; the parent is runnable (pending), so from here on a stop of this process loses nothing.
    const parent = ended.parent;
    const parentJob: NodeJobRef = {
      invocationId: inv.id,
      path: parent.path,
      wake: parent.wake,
      hint: { inv, agent: parent.agent, node: parent } satisfies JobHint,
    };
    const parentAgent = this.deps.apps.get(inv.app)?.agents.get(parent.agent);
    if (!(parentAgent instanceof WorkflowAgent)) return [parentJob];
    const view: ChildView = { path: node.path, status: 'completed', escalated: decision.escalated ?? false };
    const next = this.decideUnread(parentAgent, parent, view);
    if (!next) return [parentJob];
    const nextEvents = this.prepareDecisionEvents(inv, parent, next);
    if (nextEvents.some((p) => p.changesState)) return [parentJob];
    try {
      const advanced = await advanceIfUnchanged(this.deps.store.db, {
        expectedStatus: parent.status,
        expectedCheckpoint: parent.checkpoint,
        advance: this.advanceInput(inv, parent, next, nextEvents, null, slot),
      });
      if (advanced.outcome === 'stale') return [parentJob];
      return this.afterAdvance(inv, parent, next, advanced.advance, slot);
    } catch (err) {
      if (isRetryableSqlError(err)) return [parentJob];
      throw err;
    }
  }

  /**
   * {@link endInOneStatement} in one statement when the parent's row is known (read by the batch that made the
   * join runnable) and its next decision needs nothing else: the node ends and the parent advances (its next leaf
   * possibly claimed) together, see {@link endAndAdvanceParent}. Undefined when that does not apply or either
   * changed meanwhile (nothing written).
   */
  private async endAndAdvance(
    inv: InvocationRow,
    node: NodeRow,
    decision: WorkflowDecision,
    prepared: readonly PreparedEvent[],
    output: string,
    parent: NodeRow,
    slot: ContinuationSlot,
  ): Promise<NodeJobRef[] | undefined> {
    const parentAgent = this.deps.apps.get(inv.app)?.agents.get(parent.agent);
    if (!(parentAgent instanceof WorkflowAgent)) return undefined;
    const escalated = decision.escalated ?? false;
    const next = this.decideUnread(parentAgent, parent, { path: node.path, status: 'completed', escalated });
    if (!next) return undefined;
    const nextEvents = this.prepareDecisionEvents(inv, parent, next);
    if (nextEvents.some((p) => p.changesState)) return undefined;
    try {
      const result = await endAndAdvanceParent(this.deps.store.db, {
        node: {
          path: node.path,
          expectedStatus: node.status,
          expectedCheckpoint: node.checkpoint,
          update: { status: 'completed', checkpoint: decision.checkpoint, escalated, output },
        },
        expectedParentCheckpoint: parent.checkpoint,
        // The node's end events first, then the parent's: one seq bump, in this order.
        advance: this.advanceInput(inv, parent, next, [...prepared, ...nextEvents], null, slot),
      });
      if (result.outcome === 'stale') return undefined;
      return this.afterAdvance(inv, parent, next, result.advance, slot);
    } catch (err) {
      if (isRetryableSqlError(err)) return undefined;
      throw err;
    }
  }

  /** Stores a leaf's deferred last event in the caller's transaction; false when the attempt was superseded. */
  private async storeLeafEventTx(tx: Db, leafEvent: PreparedEvent, claimed: NodeRow): Promise<boolean> {
    try {
      await appendPlainPrepared(tx, leafEvent, { path: claimed.path, attempt: claimed.attempt });
      return true;
    } catch (err) {
      if (hasErrorCode(err, 'FENCED')) return false;
      throw err;
    }
  }

  /**
   * A leaf branch of a ParallelAgent that completed or failed: its end recorded in one statement, without reading
   * its siblings (see {@link completeBranch}); the branch that settles the last one wakes the parent for the join.
   */
  private async completeParallelBranch(
    inv: InvocationRow,
    claimed: NodeRow,
    fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>,
    parent: ParentInfo,
    leafEvent: PreparedEvent | undefined,
  ): Promise<NodeJobRef[] | undefined | 'general'> {
    let result: BranchOutcome;
    try {
      result = await this.branchEnds.submit(`${inv.id}|${parent.path}`, {
        invocationId: inv.id,
        sessionId: inv.sessionId,
        parentPath: parent.path,
        childName: claimed.path.slice(claimed.path.lastIndexOf('/') + 1),
        ...(leafEvent ? { event: eventInsertOf(leafEvent.row) } : {}),
        leaf: { path: claimed.path, attempt: claimed.attempt, fields },
      });
    } catch (err) {
      if (isRetryableSqlError(err)) return 'general';
      throw err;
    }
    if (result === 'retry') return 'general';
    if (result.outcome === 'stale') return 'general';
    if (result.outcome === 'fenced') return undefined;
    if (!result.join) return [];
    // The join, with the parent as this batch left it (and its output when known): decided from its checkpoint.
    const { path, wake, node } = result.join;
    const hint: JobHint = {
      inv,
      agent: parent.agent,
      node,
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.join.parent ? { parent: result.join.parent } : {}),
    };
    return [{ invocationId: inv.id, path, wake, hint }];
  }

  /**
   * The steady state of a sequence or loop: the parent's next decision, computed from its checkpoint as this step
   * last saw it, committed with the leaf's completion as one statement (see {@link completeAndAdvance}). Falls back
   * to the general path ('general') when the decision needs more than that (a child it cannot rule out, a parent
   * that ends, an event that changes state) or when the parent moved on meanwhile.
   */
  private async completeInOneStatement(
    inv: InvocationRow,
    claimed: NodeRow,
    fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>,
    view: ChildView,
    parent: ParentInfo,
    slot: ContinuationSlot,
    leafEvent: PreparedEvent | undefined,
  ): Promise<NodeJobRef[] | undefined | 'general'> {
    const agent = this.deps.apps.get(inv.app)?.agents.get(parent.agent);
    if (!(agent instanceof WorkflowAgent)) return 'general';
    if (agent instanceof ParallelAgent) {
      return this.completeParallelBranch(inv, claimed, fields, parent, leafEvent);
    }
    const decision = this.decideUnread(agent, parent, view, true);
    if (!decision) return 'general';
    // The root sequence's last step: the invocation ends in the same statement when its output is known without
    // reading history (the leaf's own last event is the newest final response of the run).
    let finish: { output: string; escalated: boolean } | undefined;
    if (decision.status !== 'running') {
      const output =
        decision.status === 'completed' && !parent.path.includes('/') && leafEvent
          ? finalTextOf(leafEvent.row)
          : undefined;
      if (output === undefined) return 'general';
      finish = { output, escalated: decision.escalated ?? false };
    }
    const prepared = this.prepareDecisionEvents(inv, parent, decision);
    if (prepared.some((p) => p.changesState)) return 'general';
    let result: Awaited<ReturnType<typeof completeAndAdvance>>;
    try {
      result = await completeAndAdvance(this.deps.store.db, {
        leaf: { path: claimed.path, attempt: claimed.attempt, fields },
        expectedCheckpoint: parent.checkpoint,
        // The leaf's last event first, then the parent's: one seq bump, in this order.
        advance: this.advanceInput(
          inv,
          parent,
          decision,
          leafEvent ? [leafEvent, ...prepared] : prepared,
          finish?.output ?? null,
          slot,
        ),
        ...(finish ? { finish } : {}),
      });
    } catch (err) {
      // A deadlock with a concurrent writer of the same nodes: nothing was written; the general path retries.
      if (isRetryableSqlError(err)) return 'general';
      throw err;
    }
    if (result.outcome === 'stale') return 'general';
    if (result.outcome === 'fenced') return undefined;
    return this.afterAdvance(inv, parent, decision, result.advance, slot);
  }

  /** The events of `decision` on workflow node `node`, validated and built as rows (nothing written). */
  private prepareDecisionEvents(
    inv: InvocationRow,
    node: { path: string; branch: string | null },
    decision: WorkflowDecision,
  ): PreparedEvent[] {
    return decision.events.map((event) =>
      prepareEvent({
        sessionId: inv.sessionId,
        invocationId: inv.id,
        nodePath: node.path,
        branch: node.branch ?? undefined,
        event,
      }),
    );
  }

  /**
   * What one statement writes for `decision` on workflow node `node`: its new status and checkpoint, its events
   * (prepared, changing no state), its new children — the only one, when it is a leaf and `slot` allows, claimed
   * for this worker.
   */
  private advanceInput(
    inv: InvocationRow,
    node: { path: string; branch: string | null },
    decision: WorkflowDecision,
    events: readonly PreparedEvent[],
    output: string | null,
    slot: ContinuationSlot | undefined,
  ): AdvanceInput {
    const [only] = decision.start;
    const children = decision.start.flatMap((start) => this.childInserts(start));
    const paths =
      slot?.allow &&
      !slot.taken &&
      decision.start.length === 1 &&
      only &&
      !(only.agent instanceof WorkflowAgent)
        ? [only.path]
        : slot?.allow
          ? this.fanClaims(children)
          : [];
    const claim =
      paths.length > 0 ? { paths, owner: this.deps.owner, leaseMs: this.deps.leaseMs } : undefined;
    return {
      invocationId: inv.id,
      sessionId: inv.sessionId,
      path: node.path,
      update: {
        status: decision.status,
        checkpoint: decision.checkpoint,
        escalated: decision.escalated ?? false,
        error: (decision.error as unknown as Record<string, unknown> | undefined) ?? null,
        output,
      },
      events: events.map((p) => eventInsertOf(p.row)),
      children,
      ...(claim ? { claim } : {}),
    };
  }

  /**
   * The new leaves (children, or grandchildren under a child inserted advanced) this process claims as it
   * creates them, each run by a job of its own that needs no claim statement: at most as many as the queue would
   * start at once, and only from a queue inside this process, which no other worker could take them from (a
   * shared queue spreads a fan-out over the workers instead).
   */
  private fanClaims(children: readonly ChildInsert[]): string[] {
    const idle = this.deps.queue.idleSlots?.() ?? 0;
    if (idle <= 0) return [];
    return children
      .filter((c) => c.status === undefined && !WORKFLOW_KINDS.has(c.kind))
      .slice(0, idle)
      .map((c) => c.path);
  }

  /**
   * The rows of a new child. A workflow child whose first advance needs nothing but its own empty checkpoint (it
   * writes no event and starts only leaves) is inserted already advanced, with those leaves: one statement less
   * per nesting level, and no job of its own (it is not runnable: its leaves are, and their ends advance it).
   */
  private childInserts(start: ChildStart): ChildInsert[] {
    const row: ChildInsert = {
      path: start.path,
      agent: start.agent.name,
      kind: nodeKind(start.agent),
      branch: start.branch ?? null,
    };
    if (!(start.agent instanceof WorkflowAgent)) return [row];
    const first = this.decideUnread(start.agent, { path: start.path, branch: row.branch, checkpoint: {} });
    if (
      !first ||
      first.events.length > 0 ||
      first.start.length === 0 ||
      first.start.some((g) => g.agent instanceof WorkflowAgent)
    ) {
      return [row];
    }
    return [
      { ...row, status: 'running', checkpoint: first.checkpoint },
      ...first.start.map((g) => ({
        path: g.path,
        agent: g.agent.name,
        kind: nodeKind(g.agent),
        branch: g.branch ?? null,
        parentPath: start.path,
      })),
    ];
  }

  /** After an advance: the continuation it claimed goes to `slot`; the other new children need wake-ups. */
  private afterAdvance(
    inv: InvocationRow,
    node: { path: string; agent: string; branch: string | null },
    decision: WorkflowDecision,
    result: AdvanceResult,
    slot: ContinuationSlot | undefined,
  ): NodeJobRef[] {
    const own: ParentInfo = {
      path: node.path,
      agent: node.agent,
      branch: node.branch,
      checkpoint: decision.checkpoint,
    };
    const claimed = result.claimed;
    const [first] = claimed?.nodes ?? [];
    const jobs: NodeJobRef[] = [];
    if (
      claimed &&
      first &&
      slot &&
      !slot.taken &&
      claimed.nodes.length === 1 &&
      decision.start[0]?.path === first.path
    ) {
      // The next leaf of a sequence (the only child started): it runs in this job, right after this step.
      slot.taken = { node: first, state: claimed.state, parent: own };
    } else if (claimed) {
      // A fan-out's leaves: each a job of this process's queue, carrying its claim.
      const at = Date.now();
      const created = new Map(result.created.map((c) => [c.path, c.node]));
      for (const leaf of claimed.nodes) {
        const parent = leaf.parentPath === node.path ? own : parentInfo(created.get(leaf.parentPath ?? ''));
        const hint: JobHint = {
          inv,
          agent: leaf.agent,
          node: leaf,
          claimed: { state: claimed.state, at, ...(parent ? { parent } : {}) },
        };
        jobs.push({ invocationId: inv.id, path: leaf.path, wake: leaf.wake, hint });
      }
    }
    for (const c of result.created) {
      if (c.claimed || c.node.status !== 'pending') continue;
      jobs.push({
        invocationId: inv.id,
        path: c.path,
        wake: c.wake,
        ...(WORKFLOW_KINDS.has(c.node.kind)
          ? { hint: { inv, agent: c.node.agent, node: c.node } satisfies JobHint }
          : {}),
      });
    }
    return jobs;
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
    this.stopping = true;
    for (const step of this.running.values()) step.controller.abort(SHUTDOWN);
  }

  /** How many steps this process is running. */
  get runningSteps(): number {
    return this.running.size;
  }
}

/** Logs why a step stopped without an outcome: superseded (a zombie's attempt) is worth a warning. */
function isSuperseded(err: unknown, reason: unknown): boolean {
  return hasErrorCode(reason, 'FENCED') || hasErrorCode(err, 'FENCED');
}

function logStop(log: Logger, err: unknown, reason: unknown): void {
  if (isSuperseded(err, reason)) {
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

/** The text of an event row if it is a final response (what `lastFinalText` would return for it). */
function finalTextOf(row: {
  actions: unknown;
  content?: unknown;
  longRunningToolIds?: string[] | null;
  errorCode?: string | null;
}): string | undefined {
  const event = {
    actions: row.actions as Event['actions'],
    content: (row.content ?? undefined) as Content | undefined,
    longRunningToolIds: row.longRunningToolIds ?? undefined,
  };
  if (row.errorCode || !isFinalResponse(event)) return undefined;
  return textOf(event.content) || undefined;
}
