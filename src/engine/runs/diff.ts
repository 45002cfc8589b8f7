/**
 * The diff of two runs (`agentloom diff A B`, the console's diff view): node by node, aligned by node path —
 * status, output, tool calls (name and arguments), model calls and time — with the first divergence marked.
 * Typically an original and its fork or replay; any two runs of one app compare. Reads only.
 */
import { functionCallsOf } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import type { Db } from '../../store/db/database.js';
import { listEvents } from '../../store/repos/events.js';
import { getInvocation, type InvocationRow } from '../../store/repos/invocations.js';
import { invocationNodes, type NodeRow } from '../../store/repos/nodes.js';

/** One side of a node in a diff. */
export interface NodeSide {
  status: string;
  output: string | null;
  toolCalls: { name: string; args: Record<string, unknown> }[];
  modelCalls: number;
  /** Tokens its model calls reported (total, else prompt + output); null when none reported any. */
  tokens: number | null;
  durationMs: number;
}

/** One aligned row of a diff. */
export interface DiffRow {
  path: string;
  a: NodeSide | null;
  b: NodeSide | null;
  same: boolean;
}

/** The diff of two runs. */
export interface RunDiff {
  a: { id: string; status: string; output: string | null };
  b: { id: string; status: string; output: string | null };
  nodes: DiffRow[];
  /** The first node (in A's run order) that differs and is no other's ancestor; null when none differs. */
  firstDivergence: string | null;
}

function tokensOf(modelEvents: readonly Event[]): number | null {
  const counts = modelEvents.flatMap((e) => {
    const u = e.actions.usage;
    if (!u) return [];
    return [u.totalTokens ?? (u.promptTokens ?? 0) + (u.outputTokens ?? 0)];
  });
  return counts.length === 0 ? null : counts.reduce((a, b) => a + b, 0);
}

function sideOf(node: NodeRow, events: readonly Event[]): NodeSide {
  const own = events.filter((e) => e.nodePath === node.path);
  const modelEvents = own.filter((e) => e.content?.role === 'model' && e.author === node.agent);
  return {
    status: node.status,
    output: node.output,
    toolCalls: modelEvents.flatMap((e) =>
      functionCallsOf(e.content).map((c) => ({ name: c.name, args: c.args ?? {} })),
    ),
    modelCalls: modelEvents.length,
    tokens: tokensOf(modelEvents),
    durationMs: Math.max(0, node.updatedAt.getTime() - node.createdAt.getTime()),
  };
}

async function sidesOf(db: Db, id: string): Promise<{ inv: InvocationRow; sides: Map<string, NodeSide> }> {
  const inv = await getInvocation(db, id);
  if (!inv)
    throw new AgentloomError('NOT_FOUND', `invocation ${id} does not exist`, {
      details: { invocationId: id },
    });
  const [nodes, events] = await Promise.all([
    invocationNodes(db, id),
    listEvents(db, inv.sessionId, { invocationId: id }),
  ]);
  nodes.sort((x, y) => x.createdAt.getTime() - y.createdAt.getTime() || x.path.localeCompare(y.path));
  return { inv, sides: new Map(nodes.map((n) => [n.path, sideOf(n, events)])) };
}

const sameSide = (x: NodeSide | null, y: NodeSide | null): boolean =>
  x !== null &&
  y !== null &&
  x.status === y.status &&
  x.output === y.output &&
  JSON.stringify(x.toolCalls) === JSON.stringify(y.toolCalls);

/** Compares runs `a` and `b` node by node. */
export async function diffRuns(db: Db, a: string, b: string): Promise<RunDiff> {
  const [left, right] = await Promise.all([sidesOf(db, a), sidesOf(db, b)]);
  const paths = [...left.sides.keys(), ...[...right.sides.keys()].filter((p) => !left.sides.has(p))];
  const nodes = paths.map((path) => {
    const x = left.sides.get(path) ?? null;
    const y = right.sides.get(path) ?? null;
    return { path, a: x, b: y, same: sameSide(x, y) };
  });
  const view = (inv: InvocationRow) => ({ id: inv.id, status: inv.status, output: inv.output });
  return {
    a: view(left.inv),
    b: view(right.inv),
    nodes,
    // The first differing node that is not an ancestor of others: a workflow node differs because a child did.
    firstDivergence:
      (
        nodes.find((n) => !n.same && !paths.some((p) => p.startsWith(`${n.path}/`))) ??
        nodes.find((n) => !n.same)
      )?.path ?? null,
  };
}
