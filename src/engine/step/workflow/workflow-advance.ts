/**
 * A workflow node's advance: feed its state machine what its children did, commit the checkpoint, events and new
 * children, and when the node settles wake its parent (advanced in the same transaction when it is a workflow
 * node) or, at the root, end or pause the invocation. Uses join.ts and advance-plan.ts; never runs a leaf.
 */
import {
  SETTLED,
  type WorkflowAgent,
  type ChildView,
  type NodeStatus,
  type WorkflowDecision,
} from '../../../agents/workflow/workflow.js';
import type { StoredError } from '../../../core/errors.js';
import type { Db } from '../../../store/db/database.js';
import { appendEventTx, lastFinalText } from '../../../store/repos/events.js';
import { setInvocationStatusTx, type InvocationRow } from '../../../store/repos/invocations.js';
import { getNode, nodesAt, wakeNodeTx, type NodeJobRef, type NodeRow } from '../../../store/repos/nodes.js';
import { advanceIfUnchanged, advanceNodeTx } from '../../../store/step/step-advance.js';
import { isRetryableSqlError } from '../../../store/db/tx.js';
import {
  advanceInput,
  afterAdvance,
  changesState,
  decideUnread,
  prepareDecisionEvents,
} from './advance-plan.js';
import { endInOneStatement } from './join.js';
import {
  wake,
  workflowAgentOf,
  type Continuation,
  type ContinuationSlot,
  type StepEnv,
} from '../env/step-env.js';

/** A workflow job: the node, and what the job's hint or claim statement already read of it. */
export interface WorkflowJob {
  inv: InvocationRow;
  path: string;
  agent: WorkflowAgent;
  /** The node as read by the job's claim statement or hint (its advance may then skip the transaction). */
  seen?: NodeRow | undefined;
  /** A parallel join's output, when known (see JobHint.output). */
  output?: string | undefined;
  /** The node's parent as the batch that made a join runnable read it. */
  parent?: NodeRow | undefined;
}

/**
 * Advances a workflow node for its job: first without a transaction when what the job read decides it (one
 * guarded statement), otherwise in a transaction holding the node's row lock. Wakes what the advance made runnable
 * and returns the leaf it claimed for this worker (the caller runs it, see continuation.ts).
 */
export async function advanceWorkflow(env: StepEnv, job: WorkflowJob): Promise<Continuation | undefined> {
  const { inv, path, agent, seen, output, parent } = job;
  const slot: ContinuationSlot = { allow: !env.local.stopping };
  if (seen && !SETTLED.has(seen.status as NodeStatus)) {
    const fast =
      (output !== undefined
        ? await endInOneStatement(env, { inv, node: seen, agent, output, slot, knownParent: parent })
        : undefined) ?? (await advanceInOneStatement(env, inv, seen, agent, slot));
    if (fast) {
      await wake(env, fast, inv);
      return slot.taken;
    }
  }
  // Transaction: the node's row lock, its advance, and everything its settling causes (parent advanced or woken,
  // invocation ended) commit together.
  const jobs = await env.deps.store.transaction(async (tx) => {
    slot.taken = undefined;
    const row = await getNode(tx, inv.id, path, true);
    if (!row || SETTLED.has(row.status as NodeStatus)) return [];
    return advanceInTx(env, tx, { inv, row, agent, slot });
  });
  await wake(env, jobs, inv);
  await env.deps.runHooks?.afterCommit();
  return slot.taken;
}

/**
 * A workflow job's first look without a transaction: the decision from the checkpoint the job's claim statement
 * read, committed in one statement only if the node is still exactly as read (see {@link advanceIfUnchanged}).
 * Undefined when that does not apply or the node changed meanwhile: the caller takes the transactional path.
 */
async function advanceInOneStatement(
  env: StepEnv,
  inv: InvocationRow,
  node: NodeRow,
  agent: WorkflowAgent,
  slot: ContinuationSlot,
): Promise<NodeJobRef[] | undefined> {
  const decision = decideUnread(agent, node);
  if (!decision) return undefined;
  const events = prepareDecisionEvents(inv, node, decision);
  if (changesState(events)) return undefined;
  try {
    const result = await advanceIfUnchanged(env.deps.store.db, {
      expectedStatus: node.status,
      expectedCheckpoint: node.checkpoint,
      advance: advanceInput(env, inv, node, { decision, events, output: null }, slot),
    });
    if (result.outcome === 'stale') return undefined;
    return afterAdvance(inv, node, decision, result.advance, slot);
  } catch (err) {
    // A deadlock with a concurrent writer of the same nodes: nothing was written; the transactional path retries.
    if (isRetryableSqlError(err)) return undefined;
    throw err;
  }
}

/** A workflow node whose row the caller's transaction has locked, to advance there. */
interface LockedAdvance {
  inv: InvocationRow;
  row: NodeRow;
  agent: WorkflowAgent;
  /** The child whose end triggers this advance (already updated in this transaction). */
  settled?: ChildView;
  slot?: ContinuationSlot | undefined;
}

/**
 * Advances a workflow node in the caller's transaction. Other children than `settled` are read only when the
 * state machine asks for them (a sequence: the next one; a parallel join: its branches), so a parent does not
 * re-read all its children at every step.
 */
async function advanceInTx(env: StepEnv, tx: Db, input: LockedAdvance): Promise<NodeJobRef[]> {
  const { inv, row, agent, settled } = input;
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
    if (missed.length === 0) return commitDecision(env, tx, input, decision);
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

/** Writes `decision` in the caller's transaction; when the node settles, its parent or invocation follows. */
async function commitDecision(
  env: StepEnv,
  tx: Db,
  { inv, row, slot }: LockedAdvance,
  decision: WorkflowDecision,
): Promise<NodeJobRef[]> {
  const prepared = prepareDecisionEvents(inv, row, decision);
  // Checkpoint and end events change no state: written with the advance, in its statement. Anything else
  // (never produced by the built-in workflow agents) takes the general path.
  const batched = !changesState(prepared);
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
  const output =
    decision.status === 'completed'
      ? ((await lastFinalText(tx, inv.sessionId, inv.id, row.path)) ?? null)
      : null;
  const result = await advanceNodeTx(
    tx,
    advanceInput(env, inv, row, { decision, events: batched ? prepared : [], output }, slot),
  );
  const jobs = afterAdvance(inv, row, decision, result, slot);
  if (decision.status !== 'running') {
    const ended: SettledNode = {
      row,
      status: decision.status,
      escalated: decision.escalated ?? false,
      error: decision.error,
      rootOutput: output,
    };
    jobs.push(...(await settleTx(env, tx, inv, ended, slot)));
  }
  return jobs;
}

/** A node that settled in the caller's transaction. */
export interface SettledNode {
  row: NodeRow;
  status: string;
  escalated: boolean;
  error: StoredError | undefined;
  /** Its parent, when the statement that settled it already locked and read it (null: it has none). */
  lockedParent?: NodeRow | null;
  /** A root's output when already known (otherwise read from the invocation's events). */
  rootOutput?: string | null;
}

/**
 * After a node settled, in the caller's transaction: advance its workflow parent (so "child ended" and "parent
 * advanced" are never apart), wake a leaf parent, or end (or pause) the invocation when it is the root.
 */
export async function settleTx(
  env: StepEnv,
  tx: Db,
  inv: InvocationRow,
  ended: SettledNode,
  slot?: ContinuationSlot,
): Promise<NodeJobRef[]> {
  const { row, status, escalated, error, lockedParent, rootOutput } = ended;
  if (row.parentPath !== null) {
    // "Child ended" and "parent advanced" commit in one transaction when the parent is a workflow node: no
    // window in which a crash leaves the parent behind its child, and no queue hop per step.
    const parent =
      lockedParent === undefined
        ? await getNode(tx, inv.id, row.parentPath, true)
        : (lockedParent ?? undefined);
    const agent = parent && workflowAgentOf(env, inv, parent.agent);
    if (parent && agent && !SETTLED.has(parent.status as NodeStatus)) {
      const settled: ChildView = { path: row.path, status: status as NodeStatus, escalated, error };
      return advanceInTx(env, tx, { inv, row: parent, agent, settled, slot });
    }
    // A leaf parent waiting on this child becomes pending (runnable, and visible to the reconciler if its
    // wake-up is lost); one still running sees the ended child when it commits (see leaf-commit.ts suspendTx).
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
  // The run's end (its node spans, afterRunCallback) is handled after this transaction commits.
  if (status !== 'paused') env.deps.runHooks?.noteEnded(inv.id);
  return [];
}
