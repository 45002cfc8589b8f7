/**
 * Committing a leaf's outcome, fenced by its attempt: completed or failed (with its parent's advance in one
 * statement in the steady state, else in one transaction), paused (its tool requests), or waiting on children it
 * started. Where a leaf's result is committed. Uses workflow-advance.ts (settleTx), branch-end.ts, advance-plan.ts.
 */
import { NodeSuspended, type LeafOutcome } from '../../../agents/context.js';
import { ParallelAgent } from '../../../agents/workflow/parallel-agent.js';
import { SETTLED, type ChildView, type NodeStatus } from '../../../agents/workflow/workflow.js';
import { AgentloomError, hasErrorCode } from '../../../core/errors.js';
import type { Db } from '../../../store/db/database.js';
import { appendPlainPrepared, lastFinalText, type PreparedEvent } from '../../../store/repos/events.js';
import { setInvocationStatusTx, type InvocationRow } from '../../../store/repos/invocations.js';
import {
  childNodes,
  getNode,
  insertNodeTx,
  invocationNodes,
  updateNodeTx,
  wakeNodeTx,
  type NodeJobRef,
  type NodeRow,
} from '../../../store/repos/nodes.js';
import { completeAndAdvance, settleLeafLockParentTx } from '../../../store/step/leaf-completion.js';
import {
  cancelToolRequestsTx,
  insertToolRequestsTx,
  anyAnswered,
} from '../../../store/repos/tool-requests.js';
import { isRetryableSqlError } from '../../../store/db/tx.js';
import {
  advanceInput,
  afterAdvance,
  changesState,
  decideUnread,
  prepareDecisionEvents,
} from '../workflow/advance-plan.js';
import { completeParallelBranch, finalTextOf, type LeafFields } from '../workflow/branch-end.js';
import {
  nodeKind,
  workflowAgentOf,
  type ContinuationSlot,
  type ParentInfo,
  type StepEnv,
} from '../env/step-env.js';
import { settleTx } from '../workflow/workflow-advance.js';

/** A leaf attempt's outcome, ready to commit. */
export interface LeafCommit {
  inv: InvocationRow;
  /** The node as claimed: its attempt fences every write. */
  claimed: NodeRow;
  outcome: LeafOutcome | NodeSuspended;
  /** The agent asked to end the invocation (`endInvocation`). */
  endInvocation: boolean;
  /** Whether the commit may claim the next leaf for this worker; it holds the one claimed. */
  slot: ContinuationSlot;
  /** The workflow parent as the claim statement read it (lets the completion advance it in the same statement). */
  parent: ParentInfo | undefined;
  /** The custom agent's last event, if not stored yet: it commits with the step. */
  leafEvent: PreparedEvent | undefined;
}

/** Commits a leaf's outcome. Undefined when the attempt was superseded (nothing written); else the jobs to wake. */
export async function commitLeaf(env: StepEnv, commit: LeafCommit): Promise<NodeJobRef[] | undefined> {
  const { inv, claimed, outcome, leafEvent } = commit;
  if (!isSuspension(outcome) && outcome.status !== 'paused') {
    return completeLeaf(env, { ...commit, outcome });
  }
  // Transaction: the node's row lock (the fence), its last event, its tool requests or children, its status, and
  // the parent's or invocation's settling commit together.
  return env.deps.store.transaction(async (tx) => {
    const row = await getNode(tx, inv.id, claimed.path, true);
    // Fenced: another attempt claimed the node (or it was cancelled) since this one started.
    if (!row || row.attempt !== claimed.attempt || row.status !== 'running') return undefined;
    if (leafEvent) await appendPlainPrepared(tx, leafEvent);
    if (isSuspension(outcome)) return suspendTx(env, tx, inv, row, outcome);
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
          ...(r.auth ? { auth: r.auth } : {}),
          originalCallId: r.originalCallId,
          branch: row.branch,
        } as Record<string, unknown>,
      })),
    );
    // Answered while this attempt ran (its journal predates the answer): run again instead of pausing.
    const answered = await anyAnswered(
      tx,
      inv.id,
      outcome.requests.map((r) => r.callId),
    );
    if (answered || (outcome.requests.length === 0 && (await childResumed(tx, inv.id, row.path)))) {
      const job = await wakeNodeTx(tx, inv.id, row.path, 'pending');
      return job ? [job] : [];
    }
    await updateNodeTx(tx, inv.id, row.path, {
      status: 'paused',
      escalated: false,
      output: null,
      error: null,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    return settleTx(env, tx, inv, { row, status: 'paused', escalated: false, error: undefined });
  });
}

const isSuspension = (outcome: LeafOutcome | NodeSuspended): outcome is NodeSuspended =>
  outcome instanceof NodeSuspended;

/**
 * Commits a completed or failed leaf and advances its parent: in one statement in the steady state, otherwise in
 * one transaction. The fenced status change is one conditional UPDATE (it also takes the row lock): nothing is
 * written when another attempt superseded this one.
 */
async function completeLeaf(
  env: StepEnv,
  commit: LeafCommit & { outcome: Exclude<LeafOutcome, { status: 'paused' }> },
): Promise<NodeJobRef[] | undefined> {
  const { inv, claimed, outcome, endInvocation, slot, parent, leafEvent } = commit;
  const escalated = outcome.status === 'completed' ? (outcome.escalated ?? false) : false;
  const error = outcome.status === 'failed' ? outcome.error : undefined;
  const fields: LeafFields = {
    status: outcome.status,
    escalated,
    output: outcome.status === 'completed' ? (outcome.output ?? null) : null,
    error: (error as unknown as Record<string, unknown> | undefined) ?? null,
  };
  if (parent && !endInvocation) {
    const view: ChildView = { path: claimed.path, status: outcome.status, escalated, error };
    const fast = await completeInOneStatement(env, commit, fields, view, parent);
    if (fast !== 'general') return fast;
  }
  // Transaction: the leaf's last event, its fenced end, and its parent's advance (or the invocation's end).
  return env.deps.store.transaction(async (tx) => {
    slot.taken = undefined;
    // The leaf's last event first (fenced: FENCED here means superseded, and nothing was written).
    if (leafEvent && !(await storeLeafEventTx(tx, leafEvent, claimed))) return undefined;
    // One statement: the fenced status change (it also takes the row lock) and the parent's row lock.
    const settled = await settleLeafLockParentTx(tx, inv.id, claimed.path, claimed.attempt, fields);
    if (!settled) return undefined;
    if (endInvocation && outcome.status === 'completed') return endInvocationTx(env, tx, inv);
    const ended = {
      row: settled.node,
      status: outcome.status,
      escalated,
      error,
      lockedParent: settled.parent ?? null,
    };
    return settleTx(env, tx, inv, ended, slot);
  });
}

/**
 * The steady state of a sequence or loop: the parent's next decision, computed from its checkpoint as this step
 * last saw it, committed with the leaf's completion as one statement (see {@link completeAndAdvance}); a parallel
 * branch goes to the batched branch end. 'general' when the decision needs more than that (a child it cannot rule
 * out, a parent that ends, an event that changes state) or when the parent moved on meanwhile.
 */
async function completeInOneStatement(
  env: StepEnv,
  { inv, claimed, slot, leafEvent }: LeafCommit,
  fields: LeafFields,
  view: ChildView,
  parent: ParentInfo,
): Promise<NodeJobRef[] | undefined | 'general'> {
  const agent = workflowAgentOf(env, inv, parent.agent);
  if (!agent) return 'general';
  if (agent instanceof ParallelAgent) {
    return completeParallelBranch(env, inv, { claimed, fields, event: leafEvent }, parent);
  }
  const decision = decideUnread(agent, parent, view, true);
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
  const prepared = prepareDecisionEvents(inv, parent, decision);
  if (changesState(prepared)) return 'general';
  // The leaf's last event first, then the parent's: one seq bump, in this order.
  const events = leafEvent ? [leafEvent, ...prepared] : prepared;
  let result: Awaited<ReturnType<typeof completeAndAdvance>>;
  try {
    result = await completeAndAdvance(env.deps.store.db, {
      leaf: { path: claimed.path, attempt: claimed.attempt, fields },
      expectedCheckpoint: parent.checkpoint,
      advance: advanceInput(env, inv, parent, { decision, events, output: finish?.output ?? null }, slot),
      ...(finish ? { finish } : {}),
    });
  } catch (err) {
    // A deadlock with a concurrent writer of the same nodes: nothing was written; the general path retries.
    if (isRetryableSqlError(err)) return 'general';
    throw err;
  }
  if (result.outcome === 'stale') return 'general';
  if (result.outcome === 'fenced') return undefined;
  if (finish) env.deps.runHooks?.noteEnded(inv.id);
  return afterAdvance(inv, parent, decision, result.advance, slot);
}

/** Stores a leaf's deferred last event in the caller's transaction; false when the attempt was superseded. */
async function storeLeafEventTx(tx: Db, leafEvent: PreparedEvent, claimed: NodeRow): Promise<boolean> {
  try {
    await appendPlainPrepared(tx, leafEvent, { path: claimed.path, attempt: claimed.attempt });
    return true;
  } catch (err) {
    if (hasErrorCode(err, 'FENCED')) return false;
    throw err;
  }
}

/** A paused AgentTool / transfer child that is no longer paused (answered meanwhile). */
async function childResumed(tx: Db, invocationId: string, path: string): Promise<boolean> {
  const children = await childNodes(tx, invocationId, path);
  return children.some((c) => c.status !== 'paused');
}

/** A leaf that started child nodes (AgentTool, transfer) waits for them, in the caller's transaction. */
async function suspendTx(
  env: StepEnv,
  tx: Db,
  inv: InvocationRow,
  row: NodeRow,
  suspended: NodeSuspended,
): Promise<NodeJobRef[]> {
  const jobs: NodeJobRef[] = [];
  for (const child of suspended.children) {
    const agent = env.deps.apps.get(inv.app)?.agents.get(child.agent);
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

/** `endInvocation`, in the caller's transaction: every unfinished node is cancelled and the invocation completes. */
async function endInvocationTx(env: StepEnv, tx: Db, inv: InvocationRow): Promise<NodeJobRef[]> {
  const nodes = await invocationNodes(tx, inv.id);
  for (const node of nodes) {
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
  env.deps.runHooks?.noteEnded(inv.id);
  return [];
}
