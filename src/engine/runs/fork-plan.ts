/**
 * What a fork copies (engine.fork): from the original's nodes and its session's events, the node rows and events
 * that make a new invocation resume exactly at `at`. Pure: fork.ts reads the rows and writes the plan.
 *
 * The rule: the path from the root to `at` is the fork's spine. Each spine node is a workflow node that is made to
 * stand where it stood when `at` started — a sequence at `at`'s child index, a loop at `at`'s iteration and index,
 * a parallel with its other completed branches recorded — and the spine's last node is woken, so its state machine
 * starts `at` anew. Every other node is kept (copied as it is, with its descendants) when it completed before `at`
 * in its ancestor's order (an earlier child of a sequence, an earlier child or iteration of a loop, another
 * branch of a parallel); everything else (`at`, its descendants, what came after) runs live.
 */
import { AgentloomError } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import type { CopiedEvent, ForkNode } from '../../store/repos/forks.js';
import type { NodeRow } from '../../store/repos/nodes.js';

/** The fork's rows, before they are written. */
export interface ForkPlan {
  nodes: ForkNode[];
  events: CopiedEvent[];
  /** The spine node to wake (its state machine starts `at`); undefined when `at` is the root. */
  wake: string | undefined;
  /** The copied model calls of the invocation, counted against the fork's LLM-call budget. */
  llmCalls: number;
}

/** What the plan needs besides the rows. */
export interface ForkPlanInput {
  invocationId: string;
  newInvocationId: string;
  at: string;
  nodes: readonly NodeRow[];
  /** Every event of the original's session, in seq order. */
  events: readonly Event[];
  /** The index of a child agent among its parent's sub-agents (from the agent tree). */
  childIndex: (parentAgent: string, childAgent: string) => number;
}

const iterationOf = (path: string): number => {
  const segment = path.slice(path.lastIndexOf('/') + 1);
  const hash = segment.indexOf('#');
  return hash < 0 ? 0 : Number(segment.slice(hash + 1));
};

/** Builds the fork plan; VALIDATION when `at` names no node, or a node under an agent that is not a workflow. */
export function planFork(input: ForkPlanInput): ForkPlan {
  const byPath = new Map(input.nodes.map((n) => [n.path, n]));
  const target = byPath.get(input.at);
  if (!target) {
    const known = [...byPath.keys()].sort().slice(0, 30).join(', ');
    throw new AgentloomError(
      'VALIDATION',
      `at: "${input.at}" names no node of invocation ${input.invocationId}; its nodes are: ${known}`,
      { details: { field: 'at' } },
    );
  }
  const spine: NodeRow[] = [];
  for (let p = target.parentPath; p !== null;) {
    const node = byPath.get(p);
    if (!node) throw new AgentloomError('INTERNAL', `node ${p} of ${input.invocationId} is missing`);
    if (node.kind !== 'sequential' && node.kind !== 'loop' && node.kind !== 'parallel') {
      throw new AgentloomError(
        'VALIDATION',
        `at: "${input.at}" runs inside ${node.path} (an agent's own step: a transfer or an AgentTool); fork at ${node.path} instead`,
        { details: { field: 'at' } },
      );
    }
    spine.unshift(node);
    p = node.parentPath;
  }
  const onSpine = new Set(spine.map((n) => n.path));
  const childOnSpine = (parent: NodeRow): NodeRow => {
    const child = spine.find((n) => n.parentPath === parent.path) ?? target;
    return child;
  };
  /** Whether `child` (a child of spine node `parent`) comes before the spine's child in `parent`'s order. */
  const before = (parent: NodeRow, child: NodeRow): boolean => {
    const spineChild = childOnSpine(parent);
    if (child.path === spineChild.path) return false;
    if (parent.kind === 'parallel') return true;
    const a = input.childIndex(parent.agent, child.agent);
    const b = input.childIndex(parent.agent, spineChild.agent);
    if (parent.kind === 'sequential') return a < b;
    const [ia, ib] = [iterationOf(child.path), iterationOf(spineChild.path)];
    return ia < ib || (ia === ib && a < b);
  };
  // A kept subtree: the child of a spine node that completed before `at`, with everything under it.
  const keptRoots = input.nodes.filter((n) => {
    const parent = n.parentPath === null ? undefined : byPath.get(n.parentPath);
    return parent && onSpine.has(parent.path) && n.status === 'completed' && before(parent, n);
  });
  const kept = new Set<string>();
  for (const root of keptRoots) {
    for (const n of input.nodes)
      if (n.path === root.path || n.path.startsWith(`${root.path}/`)) kept.add(n.path);
  }
  const nodes: ForkNode[] = input.nodes
    .filter((n) => kept.has(n.path))
    .map((n) => ({ ...pick(n), status: n.status }));
  for (const n of spine) {
    nodes.push({
      ...pick(n),
      status: 'running',
      checkpoint: spineCheckpoint(n, childOnSpine(n), input, kept),
      escalated: false,
      output: null,
      error: null,
    });
  }
  if (spine.length === 0)
    nodes.push({ ...pick(target), status: 'pending', checkpoint: {}, escalated: false });
  const events = copiedEvents(input, kept, onSpine);
  const llmCalls = events.filter(
    (c) => c.invocationId !== null && c.event.author !== 'user' && c.event.content?.role === 'model',
  ).length;
  return { nodes, events, wake: spine.at(-1)?.path, llmCalls };
}

function pick(n: NodeRow): ForkNode {
  const { path, parentPath, agent, kind, branch, status, checkpoint, escalated, output, error } = n;
  return { path, parentPath, agent, kind, branch, status, checkpoint, escalated, output, error };
}

/** A spine node's checkpoint as it stood when its child on the spine started. */
function spineCheckpoint(
  node: NodeRow,
  child: NodeRow,
  input: ForkPlanInput,
  kept: ReadonlySet<string>,
): Record<string, unknown> {
  const index = input.childIndex(node.agent, child.agent);
  if (node.kind === 'sequential') return { completedSubAgents: index };
  if (node.kind === 'loop') return { iteration: iterationOf(child.path), completedSubAgents: index };
  // A parallel: the kept branches as completed (with their escalations), every other one to start again.
  const children: Record<string, string> = {};
  const escalated: Record<string, true> = {};
  for (const n of input.nodes) {
    if (n.parentPath !== node.path) continue;
    children[n.agent] = kept.has(n.path) ? 'completed' : 'pending';
    if (kept.has(n.path) && n.escalated) escalated[n.agent] = true;
  }
  return { children, ...(Object.keys(escalated).length > 0 ? { escalated } : {}) };
}

/**
 * The events to copy: earlier runs' events of the session (as history, with no invocation: they belong to no run
 * of the new session), the invocation's own events up to the first one under `at` (its user event, the spine's
 * checkpoints), and every event of a kept node (a parallel sibling's may come after that).
 */
function copiedEvents(
  input: ForkPlanInput,
  kept: ReadonlySet<string>,
  onSpine: ReadonlySet<string>,
): CopiedEvent[] {
  const own = input.events.filter((e) => e.invocationId === input.invocationId);
  const firstOwn = own[0]?.seq ?? Number.POSITIVE_INFINITY;
  const under = (path: string): boolean => path === input.at || path.startsWith(`${input.at}/`);
  const cutoff = own.find((e) => under(e.nodePath))?.seq ?? Number.POSITIVE_INFINITY;
  const copied: CopiedEvent[] = [];
  for (const e of input.events) {
    if (e.invocationId !== input.invocationId) {
      if (e.seq < firstOwn) copied.push({ event: e, invocationId: null });
      continue;
    }
    const keep = kept.has(e.nodePath) || ((e.nodePath === '' || onSpine.has(e.nodePath)) && e.seq < cutoff);
    if (keep) copied.push({ event: e, invocationId: input.newInvocationId });
  }
  return copied;
}
