/** Node rows: the checkpoint table. Claims with fencing, status transitions, wake-ups. */
import { and, eq, inArray, like, lt, or, sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/database.js';
import { nodes } from '../db/schema.js';

export type NodeRow = typeof nodes.$inferSelect;

/**
 * `status = 'running'` for a statement that finds its node by primary key. Written so that the planner cannot
 * match it to `nodes_runnable_idx` (partial, on status): on that index the lookup would visit every running node
 * of every invocation and filter them, a cost that grows with the number of runs in flight; the primary key finds
 * the one row. `qualifier` is the table's alias, if any.
 */
export function runningByKey(qualifier?: string) {
  return sql.raw(`coalesce(${qualifier ? `${qualifier}.` : ''}status, '') = 'running'`);
}

/** A job for a node: the wake number makes each wake-up a distinct job id. */
export interface NodeJobRef {
  invocationId: string;
  path: string;
  wake: number;
  /** What this process knows of the node (see StepJob.hint). */
  hint?: object;
}

const key = (invocationId: string, path: string) =>
  and(eq(nodes.invocationId, invocationId), eq(nodes.path, path));

/** Inserts a node (pending, wake 1) unless it exists; returns its job when created. */
export async function insertNodeTx(
  tx: Db,
  row: Pick<NodeRow, 'invocationId' | 'path' | 'parentPath' | 'agent' | 'kind' | 'branch'>,
): Promise<NodeJobRef | undefined> {
  const [created] = await tx
    .insert(nodes)
    .values({ ...row, status: 'pending', wake: 1 })
    .onConflictDoNothing()
    .returning({ wake: nodes.wake });
  return created ? { invocationId: row.invocationId, path: row.path, wake: created.wake } : undefined;
}

export async function getNode(
  db: Db,
  invocationId: string,
  path: string,
  forUpdate = false,
): Promise<NodeRow | undefined> {
  const query = db.select().from(nodes).where(key(invocationId, path));
  const [row] = forUpdate ? await query.for('update') : await query;
  return row;
}

/** Direct children of a node. */
export async function childNodes(db: Db, invocationId: string, parentPath: string): Promise<NodeRow[]> {
  return db
    .select()
    .from(nodes)
    .where(and(eq(nodes.invocationId, invocationId), eq(nodes.parentPath, parentPath)));
}

/** The nodes of an invocation at the given paths (those that exist). */
export async function nodesAt(db: Db, invocationId: string, paths: readonly string[]): Promise<NodeRow[]> {
  if (paths.length === 0) return [];
  return db
    .select()
    .from(nodes)
    .where(and(eq(nodes.invocationId, invocationId), inArray(nodes.path, [...paths])));
}

/** Every node of an invocation. */
export async function invocationNodes(db: Db, invocationId: string): Promise<NodeRow[]> {
  return db.select().from(nodes).where(eq(nodes.invocationId, invocationId));
}

/**
 * Claims a leaf node for one attempt: bumps `attempt` (the fencing token) and takes the lease, if the node is
 * runnable — pending, waiting, or running under an expired lease. With `reclaimOwn`, a running node whose lease
 * `owner` itself holds is claimed too: the caller asserts it is not running that node any more (a step that
 * failed on a database error and is redelivered to the same worker need not wait for its own lease to lapse).
 * Returns undefined when the node is not claimable.
 */
export async function claimLeafTx(
  tx: Db,
  invocationId: string,
  path: string,
  owner: string,
  leaseMs: number,
  reclaimOwn = false,
): Promise<NodeRow | undefined> {
  const leaseGone = or(sql`${nodes.leaseExpiresAt} is null`, lt(nodes.leaseExpiresAt, sql`now()`));
  const [row] = await tx
    .update(nodes)
    .set({
      attempt: sql`${nodes.attempt} + 1`,
      status: 'running',
      leaseOwner: owner,
      leaseExpiresAt: sql`now() + ${`${leaseMs} milliseconds`}::interval`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        key(invocationId, path),
        or(
          inArray(nodes.status, ['pending', 'waiting']),
          and(
            eq(nodes.status, 'running'),
            reclaimOwn ? or(leaseGone, eq(nodes.leaseOwner, owner)) : leaseGone,
          ),
        ),
      ),
    )
    .returning();
  return row;
}

/**
 * Gives up a running attempt's lease so any worker may claim the node at once (graceful shutdown, a step
 * stopped by a fault of the machinery). Fenced by `attempt`; returns the node's new wake-up, or undefined when
 * the attempt was already superseded.
 */
export async function releaseLease(
  db: Db,
  invocationId: string,
  path: string,
  attempt: number,
): Promise<NodeJobRef | undefined> {
  const [row] = await db
    .update(nodes)
    .set({
      leaseExpiresAt: sql`now() - interval '1 millisecond'`,
      wake: sql`${nodes.wake} + 1`,
      updatedAt: sql`now()`,
    })
    .where(and(key(invocationId, path), eq(nodes.attempt, attempt), eq(nodes.status, 'running')))
    .returning({ wake: nodes.wake });
  return row ? { invocationId, path, wake: row.wake } : undefined;
}

/**
 * Gives up a running attempt that must wait (a model's rate limit) without a failure: its lease ends now, `waiting`
 * says what for and until when (the status tree shows it), and the reconciler leaves it alone until then (the
 * caller enqueues its wake-up delayed by `waitMs`). Fenced by `attempt`; returns the new wake-up, or undefined
 * when the attempt was already superseded.
 */
export async function parkLease(
  db: Db,
  invocationId: string,
  path: string,
  attempt: number,
  waitMs: number,
  waiting: Record<string, unknown>,
): Promise<NodeJobRef | undefined> {
  const until = new Date(Date.now() + Math.max(0, Math.round(waitMs)));
  const [row] = await db
    .update(nodes)
    .set({
      leaseExpiresAt: sql`now() - interval '1 millisecond'`,
      wake: sql`${nodes.wake} + 1`,
      waiting: { ...waiting, until: until.toISOString() },
      updatedAt: sql`now()`,
    })
    .where(and(key(invocationId, path), eq(nodes.attempt, attempt), eq(nodes.status, 'running')))
    .returning({ wake: nodes.wake });
  return row ? { invocationId, path, wake: row.wake } : undefined;
}

/** Extends a lease if the attempt is still ours; false when fenced. */
export async function renewLease(
  db: Db,
  invocationId: string,
  path: string,
  attempt: number,
  leaseMs: number,
): Promise<boolean> {
  const rows = await db
    .update(nodes)
    .set({ leaseExpiresAt: sql`now() + ${`${leaseMs} milliseconds`}::interval` })
    .where(and(key(invocationId, path), eq(nodes.attempt, attempt), eq(nodes.status, 'running')))
    .returning({ path: nodes.path });
  return rows.length > 0;
}

/**
 * Ends a running attempt of a leaf (completed or failed) if it is still the node's current attempt: one
 * conditional UPDATE that also locks the row for the rest of the transaction. Returns the updated row, or
 * undefined when the attempt was superseded or the node is no longer running (nothing written).
 */
export async function settleLeafTx(
  tx: Db,
  invocationId: string,
  path: string,
  attempt: number,
  fields: Pick<NodeRow, 'status' | 'escalated' | 'output' | 'error'>,
): Promise<NodeRow | undefined> {
  const [row] = await tx
    .update(nodes)
    .set({ ...fields, leaseOwner: null, leaseExpiresAt: null, updatedAt: sql`now()` })
    .where(and(key(invocationId, path), eq(nodes.attempt, attempt), eq(nodes.status, 'running')))
    .returning();
  return row;
}

/** Updates a node's fields. */
export async function updateNodeTx(
  tx: Db,
  invocationId: string,
  path: string,
  fields: Partial<NodeRow>,
): Promise<void> {
  await tx
    .update(nodes)
    .set({ ...fields, updatedAt: sql`now()` })
    .where(key(invocationId, path));
}

/** Bumps a node's wake counter; returns the job to enqueue. */
export async function wakeNodeTx(
  tx: Db,
  invocationId: string,
  path: string,
  status?: string,
): Promise<NodeJobRef | undefined> {
  const [row] = await tx
    .update(nodes)
    .set({ wake: sql`${nodes.wake} + 1`, ...(status ? { status } : {}), updatedAt: sql`now()` })
    .where(key(invocationId, path))
    .returning({ wake: nodes.wake });
  return row ? { invocationId, path, wake: row.wake } : undefined;
}

/** Options of {@link reconcileNodes}. */
export interface ReconcileOptions {
  /** A node is re-woken only when nothing happened to it (no wake-up, claim or write) for this long. */
  staleMs: number;
  /** At most this many nodes per pass. Default 500. */
  limit?: number;
}

/** Arbitrary but fixed advisory-lock key: one reconciler pass at a time across every process of a database. */
const RECONCILE_LOCK_KEY = 7_362_541_002;

/**
 * One reconciler pass (ARCHITECTURE "Failure model": the queue lost a wake-up, or a worker died). In one
 * transaction, and only in the process that wins the advisory lock, bumps the wake-up of every node that must
 * run but shows no sign of it, and returns their jobs to enqueue:
 * - `pending` nodes (any kind) not woken for `staleMs`;
 * - `running` leaf nodes whose lease is gone (its worker died or was stopped) and not touched for `staleMs` (a leaf
 *   that gave back its worker to wait for a rate limit: `staleMs` past the end of its wait).
 * Never nodes that legitimately wait: `waiting` (a leaf waiting on a child), `paused` (a human), `running`
 * workflow nodes (advanced by their children's commits), nor nodes of ended invocations. Bumping `wake` gives the
 * job an id the queue has not seen (a queue that still holds the old id would ignore a repeat), and bumping
 * `updated_at` keeps the next pass from waking the node again while the new job waits.
 * `locked` is false when another process holds the reconciler lock (this pass did nothing).
 */
export async function reconcileNodes(
  db: Db,
  options: ReconcileOptions,
): Promise<{ locked: boolean; jobs: (NodeJobRef & { definition: string })[] }> {
  const stale = `${Math.max(0, Math.round(options.staleMs))} milliseconds`;
  return db.transaction(async (tx) => {
    const [lock] = await queryRows<{ locked: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${RECONCILE_LOCK_KEY}) as locked`,
    );
    if (!lock?.locked) return { locked: false, jobs: [] };
    const rows = await queryRows<{ invocation_id: string; path: string; wake: number; definition: string }>(
      tx,
      sql`update nodes set wake = nodes.wake + 1, updated_at = now()
          from invocations inv
          where (nodes.invocation_id, nodes.path) in (
            select n.invocation_id, n.path from nodes n
            join invocations i on i.id = n.invocation_id
            where i.status not in ('completed', 'failed', 'cancelled')
              and n.updated_at < now() - ${stale}::interval
              and (n.status = 'pending'
                or (n.status = 'running' and n.kind in ('llm', 'custom')
                    and (n.lease_expires_at is null or n.lease_expires_at < now())
                    and (n.waiting is null or (n.waiting->>'until')::timestamptz < now() - ${stale}::interval)))
            limit ${options.limit ?? 500}
            for update of n skip locked)
            and inv.id = nodes.invocation_id
          returning nodes.invocation_id, nodes.path, nodes.wake, inv.definition_hash as definition`,
    );
    return {
      locked: true,
      jobs: rows.map((r) => ({
        invocationId: r.invocation_id,
        path: r.path,
        wake: Number(r.wake),
        definition: r.definition,
      })),
    };
  });
}

/** Marks every running lease as expired (an embedded engine starting on its own PGlite directory). */
export async function expireAllLeases(db: Db): Promise<void> {
  await db
    .update(nodes)
    .set({ leaseExpiresAt: sql`now() - interval '1 second'` })
    .where(eq(nodes.status, 'running'));
}

/** Nodes under a path (the path itself and its descendants). */
export function underPath(path: string) {
  return or(eq(nodes.path, path), like(nodes.path, `${path.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`));
}
