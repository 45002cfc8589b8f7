/**
 * Planning a workflow node's advance, without writing: the state machine's decision from what is known without a
 * read, the rows one advance statement writes (checkpoint, events, new children, the claims of new leaves), and
 * what to do after it committed (the continuation, the wake-ups). Pure apart from this process's idle-slot count.
 */
import {
  WorkflowAgent,
  type ChildStart,
  type ChildView,
  type WorkflowDecision,
} from '../../../agents/workflow/workflow.js';
import { prepareEvent, type PreparedEvent } from '../../../store/repos/events.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import type { NodeJobRef } from '../../../store/repos/nodes.js';
import type { AdvanceInput, AdvanceResult, ChildInsert } from '../../../store/step/step-advance.js';
import { eventInsertOf } from '../../../store/repos/step-rows.js';
import {
  nodeKind,
  parentInfo,
  WORKFLOW_KINDS,
  type ContinuationSlot,
  type JobHint,
  type Json,
  type ParentInfo,
  type StepEnv,
} from '../env/step-env.js';

/**
 * The decision of workflow `agent` at `node`'s checkpoint when it needs no child it would have to read: only
 * `settled` (a child whose end the caller knows) and children the checkpoint proves unstarted. Undefined when
 * it would need another child, or when it ends the node (ending reads the node's events and may end the
 * invocation: the transactional path) unless `allowEnd`.
 */
export function decideUnread(
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

/** The events of `decision` on workflow node `node`, validated and built as rows (nothing written). */
export function prepareDecisionEvents(
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

/** True when a prepared event changes state: such an advance cannot be one of the single-statement paths. */
export const changesState = (events: readonly PreparedEvent[]): boolean => events.some((p) => p.changesState);

/**
 * What one statement writes for `decision` on workflow node `node`: its new status and checkpoint, its events
 * (prepared, changing no state), its new children — the only one, when it is a leaf and `slot` allows, claimed
 * for this worker; a fan-out's leaves up to this process's idle slots (see {@link fanClaims}).
 */
export function advanceInput(
  env: StepEnv,
  inv: InvocationRow,
  node: { path: string; branch: string | null },
  plan: { decision: WorkflowDecision; events: readonly PreparedEvent[]; output: string | null },
  slot: ContinuationSlot | undefined,
): AdvanceInput {
  const { decision, events, output } = plan;
  const [only] = decision.start;
  const children = decision.start.flatMap((start) => childInserts(start));
  const paths =
    slot?.allow &&
    !slot.taken &&
    decision.start.length === 1 &&
    only &&
    !(only.agent instanceof WorkflowAgent)
      ? [only.path]
      : slot?.allow
        ? fanClaims(env, inv, children)
        : [];
  const claim = paths.length > 0 ? { paths, owner: env.deps.owner, leaseMs: env.deps.leaseMs } : undefined;
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
 * creates them, each run here by a job of its own that needs no claim statement: at most as many as this
 * process would start at once (its idle slots, {@link LocalSlots}). With a shared queue the rest are enqueued
 * for every worker: a fan-out spreads over the workers only when one cannot start it all, and the leaves this
 * process runs make no trip through the queue and need no claim of their own.
 */
function fanClaims(env: StepEnv, inv: InvocationRow, children: readonly ChildInsert[]): string[] {
  const idle = env.deps.queue.here?.idle(inv.definitionHash) ?? 0;
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
export function childInserts(start: ChildStart): ChildInsert[] {
  const row: ChildInsert = {
    path: start.path,
    agent: start.agent.name,
    kind: nodeKind(start.agent),
    branch: start.branch ?? null,
  };
  if (!(start.agent instanceof WorkflowAgent)) return [row];
  const first = decideUnread(start.agent, { path: start.path, branch: row.branch, checkpoint: {} });
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
export function afterAdvance(
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
