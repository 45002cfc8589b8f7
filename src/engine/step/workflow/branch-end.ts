/**
 * A parallel branch's end: the ends of one parallel's leaf branches that finish together are written as one
 * statement (the parent's row lock taken once for them all), and the branch that settles the last one makes the
 * join runnable with what the batch read (the parallel, its parent, its output). Calls only store/.
 */
import { Batcher } from '../../../core/batcher.js';
import { textOf, type Content } from '../../../core/content.js';
import { isFinalResponse, type Event } from '../../../core/event.js';
import type { PreparedEvent } from '../../../store/repos/events.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import type { NodeJobRef, NodeRow } from '../../../store/repos/nodes.js';
import { completeBranches, type ParentBranchEnd } from '../../../store/step/branch-ends.js';
import { eventInsertOf, type EventInsert } from '../../../store/repos/step-rows.js';
import type { Store } from '../../../store/store.js';
import { isRetryableSqlError } from '../../../store/db/tx.js';
import type { BranchOutcome, JobHint, ParentInfo, StepEnv } from '../env/step-env.js';

/** The batcher of branch ends of one engine: requests keyed by `invocationId|parentPath`. */
export function branchEndBatcher(store: Store): Batcher<string, ParentBranchEnd, BranchOutcome> {
  return new Batcher<string, ParentBranchEnd, BranchOutcome>(async (_, requests) => {
    const { invocationId, sessionId, parentPath } = requests[0] as ParentBranchEnd;
    try {
      // One statement for the batch (see completeBranches): each branch fenced by its attempt.
      const results = await completeBranches(store.db, {
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
}

/** A leaf's end as written by a completion statement. */
export type LeafFields = Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>;

/**
 * A leaf branch of a ParallelAgent that completed or failed: its end recorded in one statement, without reading
 * its siblings (see completeBranches); the branch that settles the last one wakes the parent for the join.
 * 'general' when the batch could not decide (stale parent, deadlock): the caller's transactional path; undefined
 * when the attempt was superseded.
 */
export async function completeParallelBranch(
  env: StepEnv,
  inv: InvocationRow,
  leaf: { claimed: NodeRow; fields: LeafFields; event: PreparedEvent | undefined },
  parent: ParentInfo,
): Promise<NodeJobRef[] | undefined | 'general'> {
  const { claimed, fields, event } = leaf;
  let result: BranchOutcome;
  try {
    result = await env.branchEnds.submit(`${inv.id}|${parent.path}`, {
      invocationId: inv.id,
      sessionId: inv.sessionId,
      parentPath: parent.path,
      childName: claimed.path.slice(claimed.path.lastIndexOf('/') + 1),
      ...(event ? { event: eventInsertOf(event.row) } : {}),
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

/** The text of an event row if it is a final response (what `lastFinalText` would return for it). */
export function finalTextOf(row: {
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
