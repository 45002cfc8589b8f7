/**
 * A leaf's end, fenced by its attempt: in the caller's transaction with its parent's row lock
 * ({@link settleLeafLockParentTx}), or with its parent's advance as one autocommit statement
 * ({@link completeAndAdvance}), the steady state of a sequence or loop. Uses step-advance.ts's SQL.
 */
import { sql } from 'drizzle-orm';
import { HotStatement, queryPrepared, type Db } from '../db/database.js';
import { INVOCATIONS_CHANNEL } from '../repos/invocations.js';
import { invocationWithPendingJson } from '../repos/tool-requests.js';
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

/**
 * Ends a running attempt of a leaf (completed or failed) if it is still the node's current attempt, and locks
 * and returns its parent, in one statement. Undefined when the attempt was superseded (nothing written).
 */
export async function settleLeafLockParentTx(
  tx: Db,
  invocationId: string,
  path: string,
  attempt: number,
  fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>,
): Promise<{ node: NodeRow; parent: NodeRow | undefined } | undefined> {
  const error = fields.error === null ? null : JSON.stringify(fields.error);
  const [row] = await queryPrepared<{ node: Json | null; parent: Json | null }>(
    tx,
    sql`with settled as (
        update nodes set status = ${fields.status}, escalated = ${fields.escalated}, output = ${fields.output},
          error = ${error}::jsonb, lease_owner = null, lease_expires_at = null, updated_at = now()
        where invocation_id = ${invocationId} and path = ${path} and attempt = ${attempt} and ${runningByKey()}
        returning *
      ),
      parent as (
        select p.* from nodes p join settled s on p.invocation_id = s.invocation_id and p.path = s.parent_path
        for update of p
      )
      select (select row_to_json(settled) from settled) as node, (select row_to_json(parent) from parent) as parent`,
  );
  if (!row?.node) return undefined;
  return { node: nodeFromJson(row.node), parent: row.parent ? nodeFromJson(row.parent) : undefined };
}

/** What {@link completeAndAdvance} did. */
export type CompleteAndAdvance =
  | { outcome: 'done'; advance: AdvanceResult }
  /** The attempt was superseded: nothing written. */
  | { outcome: 'fenced' }
  /** The parent is not as expected (advanced or ended meanwhile): nothing written; take the general path. */
  | { outcome: 'stale' };

/**
 * The CTE `settled`: the leaf ends (status, output, error; lease released) only under its fence (this attempt,
 * still running) and only if the CTE `p` found the parent as expected. Values: {@link leafValues}.
 */
const SETTLE_LEAF = sql`settled as (
        update nodes set status = ${P('leafStatus')}, escalated = ${P('leafEscalated')},
          output = ${P('leafOutput')}, error = ${P('leafError')}::jsonb, lease_owner = null, lease_expires_at = null,
          updated_at = now()
        where invocation_id = ${P('id')} and path = ${P('leafPath')} and attempt = ${P('leafAttempt')}
          and ${runningByKey()} and exists (select 1 from p)
        returning 1
      )`;

/** The values of {@link SETTLE_LEAF}'s placeholders. */
function leafValues(leaf: {
  path: string;
  attempt: number;
  fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>;
}): Record<string, unknown> {
  return {
    leafPath: leaf.path,
    leafAttempt: leaf.attempt,
    leafStatus: leaf.fields.status,
    leafEscalated: leaf.fields.escalated,
    leafOutput: leaf.fields.output,
    leafError: leaf.fields.error === null ? null : JSON.stringify(leaf.fields.error),
  };
}

/**
 * The largest notice of an ended invocation that carries its view (`wait` then returns without a read): PostgreSQL
 * refuses a NOTIFY payload of 8000 bytes or more; a larger view is left out and read by `wait` instead.
 */
const MAX_VIEW_NOTICE_BYTES = 7900;

const COMPLETE_AND_ADVANCE = new HotStatement(
  () => {
    const advance = advanceSql(sql`exists (select 1 from settled)`);
    return sql`with p as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('path')} and ${runningByKey()}
          and checkpoint = ${P('expected')}::jsonb
        for update
      ),
      ${SETTLE_LEAF},
      ${advance.ctes},
      fin as (
        update invocations set status = 'completed', output = ${P('finishOutput')},
          escalated = ${P('finishEscalated')}, updated_at = now(), ended_at = now(), temp_state = '{}'::jsonb
        where id = ${P('id')} and ${P('finish')}::boolean and status not in ('completed', 'failed', 'cancelled')
          and exists (select 1 from settled)
        returning *
      ),
      fin_notice as (
        select pg_notify(${INVOCATIONS_CHANNEL}, case when octet_length(full_notice) <= ${sql.raw(String(MAX_VIEW_NOTICE_BYTES))}
            then full_notice else json_build_object('id', id, 'status', 'completed')::text end)::text as sent
        from (select f.id, json_build_object('id', f.id, 'status', 'completed',
                'view', ${invocationWithPendingJson('f')})::text as full_notice
              from fin f) ended
      )
      select (select count(*) from p) as parent_ok, (select count(*) from settled) as settled,
        (select count(sent) from fin_notice) as finished, ${advance.columns}`;
  },
  { batched: true },
);

/**
 * A leaf's completion and its parent's advance as one statement, in autocommit (the steady state of a sequence or
 * loop): the parent is locked only if it is still running with the checkpoint the caller's decision was computed
 * from, the leaf is settled only if this attempt still owns it (the fence), and the advance writes only if both
 * held — all or nothing, since it is one statement.
 */
export async function completeAndAdvance(
  db: Db,
  input: {
    leaf: {
      path: string;
      attempt: number;
      fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>;
    };
    expectedCheckpoint: Json;
    advance: AdvanceInput;
    /**
     * The parent is the root and this advance ends it: the invocation completes in the same statement, with this
     * output, and its status change is notified.
     */
    finish?: { output: string | null; escalated: boolean };
  },
): Promise<CompleteAndAdvance> {
  const { leaf, finish } = input;
  const [row] = await COMPLETE_AND_ADVANCE.run<
    AdvanceRow & { parent_ok: string | number; settled: string | number }
  >(db, {
    ...advanceValues(input.advance),
    expected: JSON.stringify(input.expectedCheckpoint),
    ...leafValues(leaf),
    finish: finish !== undefined,
    finishOutput: finish?.output ?? null,
    finishEscalated: finish?.escalated ?? false,
  });
  if (Number(row?.parent_ok ?? 0) === 0) return { outcome: 'stale' };
  if (Number(row?.settled ?? 0) === 0) return { outcome: 'fenced' };
  return { outcome: 'done', advance: advanceResult(input.advance, row) };
}
