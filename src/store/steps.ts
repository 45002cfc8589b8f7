/**
 * The hot path of a step, in as few round trips as it can take (ARCHITECTURE "Performance budget"): a job's
 * claim with everything the step needs read in the same statement; a leaf's fenced completion that also locks its
 * parent; and a parent's advance (checkpoint, checkpoint events, new children — the next one possibly claimed by
 * this worker — and the state that child will see) in one statement. Hand-written SQL: drizzle stays the schema,
 * the migrations and the cold paths. Every write keeps its fence.
 */
import { sql, type SQL } from 'drizzle-orm';
import { HotStatement, queryPrepared, type Db } from './database.js';
import { EVENTS_CHANNEL, FOLLOWED, type EventRow } from './events.js';
import { INVOCATIONS_CHANNEL, type InvocationRow } from './invocations.js';
import { runningByKey, type NodeRow } from './nodes.js';
import { mergeScopes } from './state.js';

type Json = Record<string, unknown>;

/** Leaf kinds: the nodes a worker claims (workflow nodes are advanced, never claimed). */
const LEAF_KINDS = sql`('llm', 'custom')`;
/** A named value of a {@link HotStatement}. */
const P = (name: string) => sql.placeholder(name);

const toDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const toDateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : toDate(v));

/** A `nodes` row read as JSON (row_to_json) as the drizzle row type. */
export function nodeFromJson(r: Json): NodeRow {
  return {
    invocationId: r.invocation_id as string,
    path: r.path as string,
    parentPath: (r.parent_path as string | null) ?? null,
    agent: r.agent as string,
    kind: r.kind as string,
    branch: (r.branch as string | null) ?? null,
    status: r.status as string,
    checkpoint: (r.checkpoint as Json | null) ?? {},
    escalated: Boolean(r.escalated),
    output: (r.output as string | null) ?? null,
    error: (r.error as Json | null) ?? null,
    attempt: Number(r.attempt),
    wake: Number(r.wake),
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseExpiresAt: toDateOrNull(r.lease_expires_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

/** An `invocations` row read as JSON (row_to_json) as the drizzle row type. */
export function invocationFromJson(r: Json): InvocationRow {
  return {
    id: r.id as string,
    app: r.app as string,
    sessionId: r.session_id as string,
    userId: r.user_id as string,
    rootAgent: r.root_agent as string,
    definitionHash: r.definition_hash as string,
    status: r.status as string,
    input: (r.input as Json | null) ?? null,
    output: (r.output as string | null) ?? null,
    escalated: Boolean(r.escalated),
    error: (r.error as Json | null) ?? null,
    tempState: (r.temp_state as Json | null) ?? {},
    llmCalls: Number(r.llm_calls),
    maxLlmCalls: Number(r.max_llm_calls),
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    createdBy: (r.created_by as string | null) ?? null,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
    endedAt: toDateOrNull(r.ended_at),
  };
}

/** The state a step sees, from the scope rows and the invocation's temp state read with it. */
function stateFromJson(scopes: Json | null | undefined): Json {
  const s = scopes ?? {};
  return mergeScopes({
    session: (s.session as Json | null) ?? {},
    app: (s.app as Json | null) ?? {},
    user: (s.user as Json | null) ?? {},
    temp: (s.temp as Json | null) ?? {},
  });
}

/** SQL for the merged scopes of the invocation in the relation `inv` (with session_id and temp_state). */
const SCOPES_OF_INV = sql`(
  select jsonb_build_object('session', s.state, 'app', a.state, 'user', u.state, 'temp', inv.temp_state)
  from inv
  join sessions s on s.id = inv.session_id
  left join app_states a on a.app = s.app
  left join user_states u on u.app = s.app and u.user_id = s.user_id)`;

const leaseInterval = (leaseMs: number) => `${Math.max(1, Math.round(leaseMs))} milliseconds`;

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

/** A stored event's row as {@link advanceNodeTx} inserts it (prepared and validated by the caller). */
export interface EventInsert {
  id: string;
  nodePath: string;
  author: string;
  branch: string | null;
  content: Json | null;
  actions: Json;
  longRunningToolIds: string[] | null;
  errorCode: string | null;
  errorMessage: string | null;
}

/** An event row as the statements here insert it. */
export function eventInsertOf(row: EventRow): EventInsert {
  return {
    id: row.id,
    nodePath: row.nodePath ?? '',
    author: row.author,
    branch: row.branch ?? null,
    content: row.content ?? null,
    actions: row.actions,
    longRunningToolIds: row.longRunningToolIds ?? null,
    errorCode: row.errorCode ?? null,
    errorMessage: row.errorMessage ?? null,
  };
}

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

interface AdvanceRow {
  created: Json[] | null;
  events: Json[] | null;
  scopes: Json | null;
}

/** The values of an advance's placeholders (see {@link advanceSql}). */
function advanceValues(input: AdvanceInput): Record<string, unknown> {
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
function advanceSql(guard: SQL) {
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

function advanceResult(input: AdvanceInput, row: AdvanceRow | undefined): AdvanceResult {
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
        returning pg_notify(${INVOCATIONS_CHANNEL}, json_build_object('id', id, 'status', 'completed')::text)
      )
      select (select count(*) from p) as parent_ok, (select count(*) from settled) as settled,
        (select count(*) from fin) as finished, ${advance.columns}`;
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

/**
 * A parallel branch's end as one autocommit statement: the leaf settled under its fence, its status recorded in
 * the parent's checkpoint (`children.<name>`, a commutative update under the parent's row lock, so concurrent
 * branches neither read their siblings nor wait for each other's reads), and — when that makes every branch
 * settled — the parent made runnable (`pending`, wake bumped) for the join, which the caller wakes (and the
 * reconciler recovers if that wake-up is lost). All or nothing.
 */
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

/** What {@link insertInvocationInNewSession} stores. */
export interface NewSessionInvocation {
  sessionId: string;
  app: string;
  userId: string;
  /** The new session's state (the user event's `stateDelta`, session keys only: the caller checks). */
  sessionState: Json;
  invocation: {
    id: string;
    rootAgent: string;
    definitionHash: string;
    input: Json;
    maxLlmCalls: number;
    createdBy: string | null;
  };
  /** The user event (prepared and validated by the caller); stored as seq 1. */
  event: EventInsert;
  root: { path: string; agent: string; kind: string };
}

/**
 * An invocation in a new session, in one statement: the session (its first seq taken), the invocation (`queued`),
 * the user event as seq 1, and the root node (`pending`, wake 1). Returns the root's wake number. No NOTIFY: no one
 * can follow a session before it exists (see `sessions.followed_until`).
 * An existing session, an idempotency key or state beyond the session's take the transactional path.
 */
export async function insertInvocationInNewSession(db: Db, input: NewSessionInvocation): Promise<number> {
  const { invocation: inv, event: e } = input;
  const [row] = await queryPrepared<{ wake: string | number }>(
    db,
    sql`with s as (
        insert into sessions (id, app, user_id, state, last_seq)
        values (${input.sessionId}, ${input.app}, ${input.userId}, ${JSON.stringify(input.sessionState)}::jsonb, 1)
        returning id
      ),
      i as (
        insert into invocations (id, app, session_id, user_id, root_agent, definition_hash, status, input,
                                 max_llm_calls, created_by)
        select ${inv.id}, ${input.app}, s.id, ${input.userId}, ${inv.rootAgent}, ${inv.definitionHash}, 'queued',
               ${JSON.stringify(inv.input)}::jsonb, ${inv.maxLlmCalls}::int, ${inv.createdBy}
        from s
        returning id
      ),
      ev as (
        insert into events (session_id, seq, id, invocation_id, node_path, author, branch, content, actions,
                            long_running_tool_ids, error_code, error_message)
        select ${input.sessionId}, 1, ${e.id}, i.id, ${e.nodePath}, ${e.author}, ${e.branch},
               ${jsonOrNull(e.content)}::jsonb, ${JSON.stringify(e.actions)}::jsonb,
               ${jsonOrNull(e.longRunningToolIds)}::jsonb, ${e.errorCode}, ${e.errorMessage}
        from i
        returning seq
      ),
      n as (
        insert into nodes (invocation_id, path, parent_path, agent, kind, branch, status, wake)
        select i.id, ${input.root.path}, null, ${input.root.agent}, ${input.root.kind}, null, 'pending', 1
        from i
        returning wake
      )
      select (select wake from n) as wake`,
    { batched: true },
  );
  return Number(row?.wake ?? 1);
}

const jsonOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);
