/**
 * A workflow node's advance in one statement: its new status and checkpoint, its checkpoint events (one seq bump,
 * one NOTIFY), its new children (the next leaf possibly claimed for this worker) and the state that leaf sees —
 * in the caller's transaction ({@link advanceNodeTx}) or alone, guarded by what the caller read
 * ({@link advanceIfUnchanged}). The advance's SQL is shared by leaf-completion.ts and workflow-end.ts.
 */
import { sql, type SQL } from 'drizzle-orm';
import { HotStatement, type Db } from '../db/database.js';
import { EVENTS_CHANNEL, FOLLOWED } from '../repos/events.js';
import type { NodeRow } from '../repos/nodes.js';
import {
  leaseInterval,
  nodeFromJson,
  P,
  SCOPES_OF_INV,
  stateFromJson,
  toDate,
  type EventInsert,
  type Json,
} from '../repos/step-rows.js';

/** A child node to create. With `claimFor`, it is created already claimed (attempt 1) by that owner. */
export interface ChildInsert {
  path: string;
  agent: string;
  kind: string;
  branch: string | null;
  /** A grandchild's parent (default: the advancing node). */
  parentPath?: string;
  /** A workflow child inserted already advanced once: `running`, with that advance's checkpoint. */
  status?: 'running';
  checkpoint?: Json;
}

/** What {@link advanceNodeTx} wrote. */
export interface AdvanceResult {
  /** Children created (those that did not exist), with their wake numbers; `claimed` marks those claimed here. */
  created: { path: string; wake: number; claimed: boolean; node: NodeRow }[];
  /** Seq and time of each inserted event, in order. */
  events: { seq: number; createdAt: Date }[];
  /** The children created already claimed (in the order of `claim.paths`), and the state they see. */
  claimed?: { nodes: NodeRow[]; state: Json };
}

/**
 * A workflow node's advance, in one statement inside the caller's transaction (which holds the node's row lock):
 * its new status and checkpoint, its checkpoint events (which change no state: the caller checks) under one seq
 * bump of the session and one NOTIFY, and its new children. With `claim`, the children at `claim.paths` are inserted
 * already claimed by `claim.owner` (attempt 1, leased), and the state they will see is read in the same statement.
 */
export async function advanceNodeTx(tx: Db, input: AdvanceInput): Promise<AdvanceResult> {
  const [row] = await ADVANCE.run<AdvanceRow>(tx, advanceValues(input));
  return advanceResult(input, row);
}

const ADVANCE = new HotStatement(() => {
  const advance = advanceSql(sql`true`);
  return sql`with ${advance.ctes} select ${advance.columns}`;
});

/** What a workflow node's advance writes (see {@link advanceNodeTx}). */
export interface AdvanceInput {
  invocationId: string;
  sessionId: string;
  path: string;
  update: Pick<NodeRow, 'status' | 'checkpoint' | 'escalated' | 'error' | 'output'>;
  events: readonly EventInsert[];
  children: readonly ChildInsert[];
  /** New leaf children (or grandchildren) to insert already claimed by `owner`. */
  claim?: { paths: readonly string[]; owner: string; leaseMs: number };
}

export interface AdvanceRow {
  created: Json[] | null;
  events: Json[] | null;
  scopes: Json | null;
}

/** The values of an advance's placeholders (see {@link advanceSql}). */
export function advanceValues(input: AdvanceInput): Record<string, unknown> {
  return {
    id: input.invocationId,
    sessionId: input.sessionId,
    path: input.path,
    status: input.update.status,
    checkpoint: JSON.stringify(input.update.checkpoint),
    escalated: input.update.escalated,
    error: input.update.error === null ? null : JSON.stringify(input.update.error),
    output: input.update.output,
    eventCount: input.events.length,
    events: JSON.stringify(
      input.events.map((e) => ({
        ...e,
        content: e.content ?? undefined,
        longRunningToolIds: e.longRunningToolIds ?? undefined,
      })),
    ),
    children: JSON.stringify(input.children),
    claimPaths: JSON.stringify(input.claim?.paths ?? []),
    claimOwner: input.claim?.owner ?? null,
    claimLease: leaseInterval(input.claim?.leaseMs ?? 1),
  };
}

/**
 * The CTEs of an advance, each writing only when `guard` holds, and the columns that report it; values are the
 * placeholders {@link advanceValues} fills.
 */
export function advanceSql(guard: SQL) {
  const n = sql`${P('eventCount')}::int`;
  // Whether the child `c` is one of those to insert claimed (jsonb `?`: a string element of the array).
  const claims = sql`${P('claimPaths')}::jsonb ? (c.v->>'path')`;
  const ctes = sql`upd as (
        update nodes set status = ${P('status')}, checkpoint = ${P('checkpoint')}::jsonb,
          escalated = ${P('escalated')}, error = ${P('error')}::jsonb, output = ${P('output')}, updated_at = now()
        where invocation_id = ${P('id')} and path = ${P('path')} and ${guard}
        returning 1
      ),
      seqs as (
        update sessions set last_seq = last_seq + ${n}, updated_at = now()
        where id = ${P('sessionId')} and ${n} > 0 and ${guard}
        returning last_seq, ${FOLLOWED}
      ),
      ev as (
        insert into events (session_id, seq, id, invocation_id, node_path, author, branch, content, actions,
                            long_running_tool_ids, error_code, error_message)
        select ${P('sessionId')}, s.last_seq - ${n} + e.ord, e.v->>'id', ${P('id')}, e.v->>'nodePath', e.v->>'author',
               e.v->>'branch', e.v->'content', e.v->'actions', e.v->'longRunningToolIds', e.v->>'errorCode',
               e.v->>'errorMessage'
        from seqs s, jsonb_array_elements(${P('events')}::jsonb) with ordinality as e(v, ord)
        returning seq, created_at
      ),
      ins as (
        insert into nodes (invocation_id, path, parent_path, agent, kind, branch, status, checkpoint, wake, attempt,
                           lease_owner, lease_expires_at)
        select ${P('id')}, c.v->>'path', coalesce(c.v->>'parentPath', ${P('path')}), c.v->>'agent', c.v->>'kind',
               c.v->>'branch',
               case when ${claims} then 'running' else coalesce(c.v->>'status', 'pending') end,
               coalesce(c.v->'checkpoint', '{}'::jsonb), 1,
               case when ${claims} then 1 else 0 end,
               case when ${claims} then ${P('claimOwner')}::text end,
               case when ${claims} then now() + ${P('claimLease')}::interval end
        from jsonb_array_elements(${P('children')}::jsonb) as c(v)
        where ${guard}
        on conflict do nothing
        returning *
      ),
      inv as (select session_id, temp_state from invocations
              where id = ${P('id')} and jsonb_array_length(${P('claimPaths')}::jsonb) > 0),
      started as (
        -- A queued invocation's first advance starts it (its first leaf may be claimed right here). No NOTIFY: see
        -- INVOCATIONS_CHANNEL.
        update invocations set status = 'running', updated_at = now()
        where id = ${P('id')} and status = 'queued' and ${guard}
        returning id
      )`;
  const columns = sql`(select json_agg(row_to_json(ins)) from ins) as created,
        (select json_agg(json_build_object('seq', ev.seq, 'created_at', ev.created_at) order by ev.seq) from ev) as events,
        case when exists (select 1 from ins where ins.lease_owner is not null) then ${SCOPES_OF_INV} end as scopes,
        (select count(*) from upd) as updated,
        case when (select followed from seqs) then pg_notify(${EVENTS_CHANNEL}, json_build_object(
          'sessionId', ${P('sessionId')}::text, 'seq', (select last_seq from seqs), 'invocationId', ${P('id')}::text)::text) end as notified`;
  return { ctes, columns };
}

export function advanceResult(input: AdvanceInput, row: AdvanceRow | undefined): AdvanceResult {
  const created = (row?.created ?? []).map(nodeFromJson);
  const byPath = new Map(created.map((c) => [c.path, c]));
  const claimed = (input.claim?.paths ?? []).flatMap((path) => {
    const node = byPath.get(path);
    return node?.leaseOwner ? [node] : [];
  });
  return {
    created: created.map((c) => ({ path: c.path, wake: c.wake, claimed: c.leaseOwner !== null, node: c })),
    events: (row?.events ?? []).map((e) => ({ seq: Number(e.seq), createdAt: toDate(e.created_at) })),
    ...(claimed.length > 0 ? { claimed: { nodes: claimed, state: stateFromJson(row?.scopes) } } : {}),
  };
}

const ADVANCE_IF_UNCHANGED = new HotStatement(
  () => {
    const advance = advanceSql(sql`exists (select 1 from p)`);
    return sql`with p as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('path')} and status = ${P('expectedStatus')}
          and checkpoint = ${P('expected')}::jsonb
        for update
      ),
      ${advance.ctes}
      select (select count(*) from p) as node_ok, ${advance.columns}`;
  },
  { batched: true },
);

/**
 * A workflow node's advance as one autocommit statement, written only if the node is still as the caller read it
 * (same status, same checkpoint): the lock-free first look of a workflow job (its first advance, a parent
 * wake-up). 'stale' (nothing written) when it changed meanwhile: take the transactional path.
 */
export async function advanceIfUnchanged(
  db: Db,
  input: { expectedStatus: string; expectedCheckpoint: Json; advance: AdvanceInput },
): Promise<{ outcome: 'done'; advance: AdvanceResult } | { outcome: 'stale' }> {
  const [row] = await ADVANCE_IF_UNCHANGED.run<AdvanceRow & { node_ok: string | number }>(db, {
    ...advanceValues(input.advance),
    expectedStatus: input.expectedStatus,
    expected: JSON.stringify(input.expectedCheckpoint),
  });
  if (Number(row?.node_ok ?? 0) === 0) return { outcome: 'stale' };
  return { outcome: 'done', advance: advanceResult(input.advance, row) };
}
