/**
 * A workflow node's end without a transaction (a parallel join decided from its checkpoint), each one guarded
 * autocommit statement: the node ends and its parent is made runnable ({@link endAndWakeParent}), or the node ends
 * and its running parent advances ({@link endAndAdvanceParent}). Uses step-advance.ts's SQL.
 */
import { sql } from 'drizzle-orm';
import { HotStatement, type Db } from '../db/database.js';
import { runningByKey, type NodeRow } from '../repos/nodes.js';
import {
  advanceResult,
  advanceSql,
  advanceValues,
  type AdvanceInput,
  type AdvanceResult,
  type AdvanceRow,
} from './step-advance.js';
import { nodeFromJson, P, type Json } from '../repos/step-rows.js';

const END_AND_WAKE_PARENT = new HotStatement(
  () => {
    // The parent is locked first (then the node, in the guard's order), as every statement here locks a parent
    // before its child.
    const guard = sql`exists (select 1 from r) and exists (select 1 from p)`;
    const advance = advanceSql(guard);
    return sql`with r as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('parentPath')} and ${runningByKey()}
          and kind in ('sequential', 'parallel', 'loop')
        for update
      ),
      p as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('path')} and status = ${P('expectedStatus')}
          and checkpoint = ${P('expected')}::jsonb
        for update
      ),
      ${advance.ctes},
      woke as (
        update nodes w set status = 'pending', wake = w.wake + 1, updated_at = now()
        where w.invocation_id = ${P('id')} and w.path = ${P('parentPath')} and ${guard}
        returning row_to_json(w) as node
      )
      select (select node from woke) as parent, ${advance.columns}`;
  },
  { batched: true },
);

/**
 * A workflow node's end as one autocommit statement, written only if the node is still as the caller read it and
 * its parent is a running workflow node: the node's final status, checkpoint, output and events, and its parent
 * made runnable (`pending`, wake bumped) for its advance, which the caller then makes (and the reconciler recovers
 * if this process stops first). Returns the parent as written; 'stale' (nothing written) otherwise.
 */
export async function endAndWakeParent(
  db: Db,
  input: { expectedStatus: string; expectedCheckpoint: Json; parentPath: string; advance: AdvanceInput },
): Promise<{ outcome: 'done'; parent: NodeRow; advance: AdvanceResult } | { outcome: 'stale' }> {
  const [row] = await END_AND_WAKE_PARENT.run<AdvanceRow & { parent: Json | null }>(db, {
    ...advanceValues(input.advance),
    expectedStatus: input.expectedStatus,
    expected: JSON.stringify(input.expectedCheckpoint),
    parentPath: input.parentPath,
  });
  if (!row?.parent) return { outcome: 'stale' };
  return { outcome: 'done', parent: nodeFromJson(row.parent), advance: advanceResult(input.advance, row) };
}

const END_AND_ADVANCE_PARENT = new HotStatement(
  () => {
    const advance = advanceSql(sql`exists (select 1 from ended)`);
    // The parent is locked first (then the node), as every statement here locks a parent before its child.
    return sql`with p as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('path')} and ${runningByKey()}
          and checkpoint = ${P('expected')}::jsonb
        for update
      ),
      r as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('nodePath')} and status = ${P('nodeExpectedStatus')}
          and checkpoint = ${P('nodeExpected')}::jsonb and exists (select 1 from p)
        for update
      ),
      ended as (
        update nodes set status = ${P('nodeStatus')}, checkpoint = ${P('nodeCheckpoint')}::jsonb,
          escalated = ${P('nodeEscalated')}, output = ${P('nodeOutput')}, updated_at = now()
        where invocation_id = ${P('id')} and path = ${P('nodePath')} and exists (select 1 from r)
        returning 1
      ),
      ${advance.ctes}
      select (select count(*) from ended) as ended, ${advance.columns}`;
  },
  { batched: true },
);

/**
 * A workflow node's end and its running parent's advance as one autocommit statement, written only if both are
 * still as the caller read them (the node: same status and checkpoint; the parent: running, same checkpoint): the
 * node's final status, checkpoint and output, then the parent's advance (`advance`, whose events come after the
 * node's end events, and whose new leaf may be claimed). No intermediate state: the parent goes from running to
 * running. 'stale' (nothing written) otherwise: take {@link endAndWakeParent}'s path.
 */
export async function endAndAdvanceParent(
  db: Db,
  input: {
    node: {
      path: string;
      expectedStatus: string;
      expectedCheckpoint: Json;
      update: { status: 'completed'; checkpoint: Json; escalated: boolean; output: string };
    };
    expectedParentCheckpoint: Json;
    advance: AdvanceInput;
  },
): Promise<{ outcome: 'done'; advance: AdvanceResult } | { outcome: 'stale' }> {
  const { node } = input;
  const [row] = await END_AND_ADVANCE_PARENT.run<AdvanceRow & { ended: string | number }>(db, {
    ...advanceValues(input.advance),
    expected: JSON.stringify(input.expectedParentCheckpoint),
    nodePath: node.path,
    nodeExpectedStatus: node.expectedStatus,
    nodeExpected: JSON.stringify(node.expectedCheckpoint),
    nodeStatus: node.update.status,
    nodeCheckpoint: JSON.stringify(node.update.checkpoint),
    nodeEscalated: node.update.escalated,
    nodeOutput: node.update.output,
  });
  if (Number(row?.ended ?? 0) === 0) return { outcome: 'stale' };
  return { outcome: 'done', advance: advanceResult(input.advance, row) };
}
