/**
 * A parallel's branch ends: one autocommit statement for the branches of one parent that ended together, each
 * fenced by its attempt, recorded in the parent's checkpoint under its row lock, their last events stored, and the
 * parent made runnable for the join when the last branch settled.
 */
import { sql } from 'drizzle-orm';
import { HotStatement, type Db } from '../db/database.js';
import { EVENTS_CHANNEL, FOLLOWED } from '../repos/events.js';
import { runningByKey, type NodeRow } from '../repos/nodes.js';
import { nodeFromJson, P, type EventInsert, type Json } from '../repos/step-rows.js';

/** Statuses after which a child never runs again by itself (a parallel join waits for all its branches to reach one). */
const SETTLED_SQL = sql`('completed', 'paused', 'failed', 'cancelled')`;

/** What {@link completeBranch} did. */
export type CompleteBranch =
  /** Settled and recorded; `join` is the parent's wake-up when this was the last branch to settle. */
  | { outcome: 'done'; join?: { path: string; wake: number; node: NodeRow; parent?: NodeRow } }
  /** The attempt was superseded: nothing written. */
  | { outcome: 'fenced' }
  /** The parent is not running (or not there): nothing written; take the general path. */
  | { outcome: 'stale' };

/** One branch's end in {@link completeBranches}. */
export interface BranchEnd {
  childName: string;
  /** The leaf's last event, stored with its end (one seq bump, one NOTIFY). */
  event?: EventInsert;
  leaf: {
    path: string;
    attempt: number;
    fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>;
  };
}

/** A branch's end with the parent it belongs to. */
export type ParentBranchEnd = BranchEnd & { invocationId: string; sessionId: string; parentPath: string };

/**
 * A parallel branch's end as one autocommit statement: the leaf settled under its fence, its status recorded in
 * the parent's checkpoint (`children.<name>`, a commutative update under the parent's row lock, so concurrent
 * branches neither read their siblings nor wait for each other's reads), and — when that makes every branch
 * settled — the parent made runnable (`pending`, wake bumped) for the join, which the caller wakes (and the
 * reconciler recovers if that wake-up is lost). All or nothing.
 */
export async function completeBranch(db: Db, input: ParentBranchEnd): Promise<CompleteBranch> {
  const { invocationId, sessionId, parentPath, ...branch } = input;
  const [result] = await completeBranches(db, { invocationId, sessionId, parentPath, branches: [branch] });
  return result as CompleteBranch;
}

const COMPLETE_BRANCHES = new HotStatement(() => {
  const children = sql`coalesce(n.checkpoint->'children', '{}'::jsonb) || (select jsonb_object_agg(name, status) from settled)`;
  const withChildren = sql`jsonb_set(n.checkpoint, '{children}', ${children})`;
  // Escalations are recorded too (only true ones), so the join can be decided from the checkpoint alone.
  const escalations = sql`(select jsonb_object_agg(name, true) from settled where escalated)`;
  const recorded = sql`case when ${escalations} is null then ${withChildren}
    else jsonb_set(${withChildren}, '{escalated}', coalesce(n.checkpoint->'escalated', '{}'::jsonb) || ${escalations}) end`;
  const allSettled = sql`not exists (select 1 from jsonb_each_text(${children}) c where c.value not in ${SETTLED_SQL})`;
  return sql`with req as (
        select r.ord, r.v->>'path' as path, (r.v->>'attempt')::int as attempt, r.v->>'name' as name,
               r.v->>'status' as status, (r.v->>'escalated')::boolean as escalated, r.v->>'output' as output,
               nullif(r.v->'error', 'null'::jsonb) as error, nullif(r.v->'event', 'null'::jsonb) as event
        from jsonb_array_elements(${P('branches')}::jsonb) with ordinality as r(v, ord)
      ),
      p as (
        select 1 from nodes
        where invocation_id = ${P('id')} and path = ${P('parentPath')} and ${runningByKey()}
          and jsonb_typeof(checkpoint->'children') = 'object'
        for update
      ),
      settled as (
        update nodes n set status = req.status, escalated = req.escalated, output = req.output, error = req.error,
          lease_owner = null, lease_expires_at = null, updated_at = now()
        from req
        where n.invocation_id = ${P('id')} and n.path = any(array(select path from req))
          and n.path = req.path and n.attempt = req.attempt
          and ${runningByKey('n')} and exists (select 1 from p)
        returning req.ord, req.name, req.status, req.escalated, req.event
      ),
      upd as (
        update nodes n set checkpoint = ${recorded}, updated_at = now(),
          status = case when ${allSettled} then 'pending' else n.status end,
          wake = case when ${allSettled} then n.wake + 1 else n.wake end
        where n.invocation_id = ${P('id')} and n.path = ${P('parentPath')} and exists (select 1 from settled)
        returning case when n.status = 'pending' then n.wake end as wake,
          case when n.status = 'pending' then row_to_json(n) end as node,
          -- For the join: its own parent as it is, so the join can end it and advance that parent in one statement.
          case when n.status = 'pending' then (select row_to_json(g) from nodes g
            where g.invocation_id = n.invocation_id and g.path = n.parent_path) end as parent
      ),
      evs as (
        select row_number() over (order by ord) as k, count(*) over () as total, event
        from settled where event is not null
      ),
      seqs as (
        update sessions set last_seq = last_seq + (select count(*) from evs), updated_at = now()
        where id = ${P('sessionId')} and exists (select 1 from evs)
        returning last_seq, ${FOLLOWED}
      ),
      ev as (
        insert into events (session_id, seq, id, invocation_id, node_path, author, branch, content, actions,
                            long_running_tool_ids, error_code, error_message)
        select ${P('sessionId')}, s.last_seq - e.total + e.k, e.event->>'id', ${P('id')}, e.event->>'nodePath',
               e.event->>'author', e.event->>'branch', e.event->'content', e.event->'actions',
               e.event->'longRunningToolIds', e.event->>'errorCode', e.event->>'errorMessage'
        from seqs s, evs e
        returning seq
      )
      select (select count(*) from p) as parent_ok, (select json_agg(ord) from settled) as settled,
        (select wake from upd) as wake, (select node from upd) as node, (select parent from upd) as grand,
        (select pg_notify(${EVENTS_CHANNEL}, json_build_object('sessionId', ${P('sessionId')}::text,
          'seq', max(ev.seq), 'invocationId', ${P('id')}::text)::text) from ev
          having count(*) > 0 and (select followed from seqs)) as notified`;
});

/**
 * {@link completeBranch} for several branches of one parent that ended together, in one statement and one commit:
 * each branch's answer at its index (the parent's join, when this batch settled the last branch, with the first
 * branch that was written).
 */
export async function completeBranches(
  db: Db,
  input: { invocationId: string; sessionId: string; parentPath: string; branches: readonly BranchEnd[] },
): Promise<CompleteBranch[]> {
  const [row] = await COMPLETE_BRANCHES.run<{
    parent_ok: string | number;
    settled: (string | number)[] | null;
    wake: string | number | null;
    node: Json | null;
    grand: Json | null;
  }>(db, {
    id: input.invocationId,
    sessionId: input.sessionId,
    parentPath: input.parentPath,
    branches: JSON.stringify(
      input.branches.map((b) => ({
        path: b.leaf.path,
        attempt: b.leaf.attempt,
        name: b.childName,
        status: b.leaf.fields.status,
        escalated: b.leaf.fields.escalated,
        output: b.leaf.fields.output,
        error: b.leaf.fields.error,
        event: b.event
          ? {
              ...b.event,
              content: b.event.content ?? undefined,
              longRunningToolIds: b.event.longRunningToolIds ?? undefined,
            }
          : null,
      })),
    ),
  });
  if (Number(row?.parent_ok ?? 0) === 0) return input.branches.map(() => ({ outcome: 'stale' }));
  const settled = new Set((row?.settled ?? []).map(Number));
  const first = Math.min(...settled);
  return input.branches.map((_, i): CompleteBranch => {
    if (!settled.has(i + 1)) return { outcome: 'fenced' };
    if (i + 1 === first && row?.wake !== null && row?.wake !== undefined && row.node) {
      return {
        outcome: 'done',
        join: {
          path: input.parentPath,
          wake: Number(row.wake),
          node: nodeFromJson(row.node),
          ...(row.grand ? { parent: nodeFromJson(row.grand) } : {}),
        },
      };
    }
    return { outcome: 'done' };
  });
}
