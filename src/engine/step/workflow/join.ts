/**
 * A parallel join without a transaction: when a workflow node's checkpoint alone decides that it completes and
 * its output is known (from the batch of branch ends that settled its last branch), it ends and its parent
 * advances in one or two guarded statements. Anything else answers undefined: the caller's transactional path.
 */
import type { ChildView, WorkflowAgent, WorkflowDecision } from '../../../agents/workflow/workflow.js';
import type { PreparedEvent } from '../../../store/repos/events.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import type { NodeJobRef, NodeRow } from '../../../store/repos/nodes.js';
import { advanceIfUnchanged } from '../../../store/step/step-advance.js';
import { endAndAdvanceParent, endAndWakeParent } from '../../../store/step/workflow-end.js';
import { isRetryableSqlError } from '../../../store/db/tx.js';
import {
  advanceInput,
  afterAdvance,
  changesState,
  decideUnread,
  prepareDecisionEvents,
} from './advance-plan.js';
import { workflowAgentOf, type ContinuationSlot, type JobHint, type StepEnv } from '../env/step-env.js';

/** What ends at a join: the workflow node as its job saw it, its agent, and its known output. */
export interface JoinInput {
  inv: InvocationRow;
  node: NodeRow;
  agent: WorkflowAgent;
  output: string;
  slot: ContinuationSlot;
  /** The node's parent as the batch that made the join runnable read it. */
  knownParent?: NodeRow | undefined;
}

/**
 * A workflow node's end without a transaction, when its checkpoint alone decides that it completes (a parallel
 * join whose branches all completed) and its output is known: one statement ends it and makes its parent
 * runnable, a second advances the parent from the row the first returned (both guarded, see
 * {@link endAndWakeParent} and {@link advanceIfUnchanged}) — or one statement does both when the parent's row is
 * known. Undefined when that does not apply or the node changed meanwhile: the caller takes its usual path. A root
 * node ends the invocation: the usual path.
 */
export async function endInOneStatement(env: StepEnv, input: JoinInput): Promise<NodeJobRef[] | undefined> {
  const { inv, node, agent, output, slot, knownParent } = input;
  if (node.parentPath === null) return undefined;
  const decision = decideUnread(agent, node, undefined, true);
  if (decision?.status !== 'completed') return undefined;
  const prepared = prepareDecisionEvents(inv, node, decision);
  if (changesState(prepared)) return undefined;
  if (knownParent?.path === node.parentPath && knownParent.status === 'running') {
    const merged = await endAndAdvance(env, input, decision, prepared, knownParent);
    if (merged) return merged;
  }
  let ended: Awaited<ReturnType<typeof endAndWakeParent>>;
  try {
    ended = await endAndWakeParent(env.deps.store.db, {
      expectedStatus: node.status,
      expectedCheckpoint: node.checkpoint,
      parentPath: node.parentPath,
      advance: advanceInput(env, inv, node, { decision, events: prepared, output }, undefined),
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
  const parentAgent = workflowAgentOf(env, inv, parent.agent);
  if (!parentAgent) return [parentJob];
  const view: ChildView = { path: node.path, status: 'completed', escalated: decision.escalated ?? false };
  const next = decideUnread(parentAgent, parent, view);
  if (!next) return [parentJob];
  const nextEvents = prepareDecisionEvents(inv, parent, next);
  if (changesState(nextEvents)) return [parentJob];
  try {
    const advanced = await advanceIfUnchanged(env.deps.store.db, {
      expectedStatus: parent.status,
      expectedCheckpoint: parent.checkpoint,
      advance: advanceInput(env, inv, parent, { decision: next, events: nextEvents, output: null }, slot),
    });
    if (advanced.outcome === 'stale') return [parentJob];
    return afterAdvance(inv, parent, next, advanced.advance, slot);
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
async function endAndAdvance(
  env: StepEnv,
  { inv, node, output, slot }: JoinInput,
  decision: WorkflowDecision,
  prepared: readonly PreparedEvent[],
  parent: NodeRow,
): Promise<NodeJobRef[] | undefined> {
  const parentAgent = workflowAgentOf(env, inv, parent.agent);
  if (!parentAgent) return undefined;
  const escalated = decision.escalated ?? false;
  const next = decideUnread(parentAgent, parent, { path: node.path, status: 'completed', escalated });
  if (!next) return undefined;
  const nextEvents = prepareDecisionEvents(inv, parent, next);
  if (changesState(nextEvents)) return undefined;
  try {
    const result = await endAndAdvanceParent(env.deps.store.db, {
      node: {
        path: node.path,
        expectedStatus: node.status,
        expectedCheckpoint: node.checkpoint,
        update: { status: 'completed', checkpoint: decision.checkpoint, escalated, output },
      },
      expectedParentCheckpoint: parent.checkpoint,
      // The node's end events first, then the parent's: one seq bump, in this order.
      advance: advanceInput(
        env,
        inv,
        parent,
        { decision: next, events: [...prepared, ...nextEvents], output: null },
        slot,
      ),
    });
    if (result.outcome === 'stale') return undefined;
    return afterAdvance(inv, parent, next, result.advance, slot);
  } catch (err) {
    if (isRetryableSqlError(err)) return undefined;
    throw err;
  }
}
