/**
 * A job's claim: its first (and, for a leaf, only) read, in one statement — the invocation, the node, and for a
 * runnable leaf its claim (attempt bumped: the fencing token; lease taken) and the state it sees. Autocommit.
 */
import { sql } from 'drizzle-orm';
import { HotStatement, type Db } from '../db/database.js';
import type { InvocationRow } from '../repos/invocations.js';
import type { NodeRow } from '../repos/nodes.js';
import {
  invocationFromJson,
  LEAF_KINDS,
  leaseInterval,
  nodeFromJson,
  P,
  SCOPES_OF_INV,
  stateFromJson,
  type Json,
} from '../repos/step-rows.js';

/** What a job's first statement found. */
export interface JobClaim {
  inv: InvocationRow;
  /** The node as claimed (when `claimed`), else as it is. Undefined when it does not exist. */
  node: NodeRow | undefined;
  claimed: boolean;
  /** The state the claimed step sees (only when `claimed`). */
  state: Json | undefined;
  /** The claimed node's parent as it is now (only when `claimed`). */
  parent: NodeRow | undefined;
}

const CLAIM_FOR_JOB = new HotStatement(
  () => sql`with inv as (select * from invocations where id = ${P('id')}),
      claimed as (
        update nodes n set attempt = n.attempt + 1, status = 'running', lease_owner = ${P('owner')},
          lease_expires_at = now() + ${P('lease')}::interval, updated_at = now()
        from inv
        where n.invocation_id = ${P('id')} and n.path = ${P('path')} and n.kind in ${LEAF_KINDS}
          and inv.status not in ('completed', 'failed', 'cancelled') and inv.definition_hash = ${P('hash')}
          and (n.status in ('pending', 'waiting')
            or (n.status = 'running' and (n.lease_expires_at is null or n.lease_expires_at < now()
              or (${P('reclaimOwn')}::boolean and n.lease_owner = ${P('owner')}))))
        returning n.*
      ),
      started as (
        update invocations set status = 'running', updated_at = now()
        where id = ${P('id')} and status = 'queued' and exists (select 1 from claimed)
        returning id
      )
      select (select row_to_json(inv) from inv) as inv,
        (select row_to_json(claimed) from claimed) as claimed,
        case when not exists (select 1 from claimed) then
          (select row_to_json(n) from nodes n where n.invocation_id = ${P('id')} and n.path = ${P('path')}) end as node,
        case when exists (select 1 from claimed) then ${SCOPES_OF_INV} end as scopes,
        (select row_to_json(p) from nodes p join claimed c on p.invocation_id = c.invocation_id
          and p.path = c.parent_path) as parent,
        (select count(*) from started) as started`,
);

/**
 * A job's first and, for a leaf, only read: the invocation and the node, and — when the node is a leaf of a live
 * invocation started with `definitionHash` and is runnable (pending, waiting, or running under an expired lease,
 * or under `owner`'s own lease with `reclaimOwn`) — its claim (attempt bumped: the fencing token; lease taken),
 * the invocation marked running if it was queued, and the state the step sees. One statement.
 */
export async function claimForJob(
  db: Db,
  input: {
    invocationId: string;
    path: string;
    owner: string;
    leaseMs: number;
    definitionHash: string;
    reclaimOwn: boolean;
  },
): Promise<JobClaim | undefined> {
  const [row] = await CLAIM_FOR_JOB.run<{
    inv: Json | null;
    node: Json | null;
    claimed: Json | null;
    scopes: Json | null;
    parent: Json | null;
  }>(db, {
    id: input.invocationId,
    path: input.path,
    owner: input.owner,
    lease: leaseInterval(input.leaseMs),
    hash: input.definitionHash,
    reclaimOwn: input.reclaimOwn,
  });
  return jobClaimOf(row);
}

/** One job's claim request (see {@link claimForJobs}). */
export interface ClaimRequest {
  invocationId: string;
  path: string;
  definitionHash: string;
}

const CLAIM_FOR_JOBS = new HotStatement(
  () => sql`with req as (
        select r.ord, r.v->>'id' as id, r.v->>'path' as path, r.v->>'hash' as hash
        from jsonb_array_elements(${P('requests')}::jsonb) with ordinality as r(v, ord)
      ),
      runnable as (
        -- Rows locked in one order across processes: two batches never wait for each other in a cycle.
        select n.invocation_id, n.path from req
        cross join lateral (
          select * from nodes n where n.invocation_id = req.id and n.path = req.path
        ) n
        join invocations i on i.id = req.id
        where n.kind in ${LEAF_KINDS} and i.status not in ('completed', 'failed', 'cancelled')
          and i.definition_hash = req.hash
          and (n.status in ('pending', 'waiting')
            or (n.status = 'running' and (n.lease_expires_at is null or n.lease_expires_at < now()
              or n.lease_owner = ${P('owner')})))
        order by n.invocation_id, n.path
        for update of n
      ),
      claimed as (
        update nodes n set attempt = n.attempt + 1, status = 'running', lease_owner = ${P('owner')},
          lease_expires_at = now() + ${P('lease')}::interval, updated_at = now()
        from runnable r
        where n.invocation_id = r.invocation_id and n.path = r.path
        returning n.*
      ),
      started as (
        update invocations set status = 'running', updated_at = now()
        where id in (select invocation_id from claimed) and status = 'queued'
        returning id
      )
      select req.ord, row_to_json(i) as inv,
        case when c.path is not null then row_to_json(c) end as claimed,
        case when c.path is null then
          (select row_to_json(n) from nodes n where n.invocation_id = req.id and n.path = req.path) end as node,
        case when c.path is not null then
          jsonb_build_object('session', s.state, 'app', a.state, 'user', u.state, 'temp', i.temp_state) end as scopes,
        case when c.path is not null then
          (select row_to_json(p) from nodes p where p.invocation_id = c.invocation_id and p.path = c.parent_path)
        end as parent,
        (select count(*) from started) as started
      from req
      left join invocations i on i.id = req.id
      left join claimed c on c.invocation_id = req.id and c.path = req.path
      left join sessions s on s.id = i.session_id
      left join app_states a on a.app = s.app
      left join user_states u on u.app = s.app and u.user_id = s.user_id
      order by req.ord`,
);

/**
 * {@link claimForJob} for several jobs at once (those a worker received together, such as a fan-out's), in one
 * statement and one commit: each request's answer at its index. `owner`'s own leases may be re-claimed.
 */
export async function claimForJobs(
  db: Db,
  owner: string,
  leaseMs: number,
  requests: readonly ClaimRequest[],
): Promise<(JobClaim | undefined)[]> {
  const rows = await CLAIM_FOR_JOBS.run<ClaimRow & { ord: string | number }>(db, {
    requests: JSON.stringify(
      requests.map((r) => ({ id: r.invocationId, path: r.path, hash: r.definitionHash })),
    ),
    owner,
    lease: leaseInterval(leaseMs),
  });
  const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
  return requests.map((_, i) => jobClaimOf(byOrd.get(i + 1)));
}

interface ClaimRow {
  inv: Json | null;
  node: Json | null;
  claimed: Json | null;
  scopes: Json | null;
  parent: Json | null;
}

function jobClaimOf(row: ClaimRow | undefined): JobClaim | undefined {
  if (!row?.inv) return undefined;
  const inv = invocationFromJson(row.inv);
  if (row.claimed) {
    if (inv.status === 'queued') inv.status = 'running';
    return {
      inv,
      node: nodeFromJson(row.claimed),
      claimed: true,
      state: stateFromJson(row.scopes),
      parent: row.parent ? nodeFromJson(row.parent) : undefined,
    };
  }
  return {
    inv,
    node: row.node ? nodeFromJson(row.node) : undefined,
    claimed: false,
    state: undefined,
    parent: undefined,
  };
}
