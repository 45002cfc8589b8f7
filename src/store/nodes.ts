/** Node rows: the checkpoint table. Claims with fencing, status transitions, wake-ups. */
import { and, eq, inArray, like, lt, or, sql } from 'drizzle-orm';
import type { Db } from './database.js';
import { nodes } from './schema.js';

export type NodeRow = typeof nodes.$inferSelect;

/** A job for a node: the wake number makes each wake-up a distinct job id. */
export interface NodeJobRef {
  invocationId: string;
  path: string;
  wake: number;
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

/** Every node of an invocation. */
export async function invocationNodes(db: Db, invocationId: string): Promise<NodeRow[]> {
  return db.select().from(nodes).where(eq(nodes.invocationId, invocationId));
}

/**
 * Claims a leaf node for one attempt: bumps `attempt` (the fencing token) and takes the lease, if the node is
 * runnable — pending, waiting, or running under an expired lease. Returns undefined otherwise.
 */
export async function claimLeafTx(
  tx: Db,
  invocationId: string,
  path: string,
  owner: string,
  leaseMs: number,
): Promise<NodeRow | undefined> {
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
            or(sql`${nodes.leaseExpiresAt} is null`, lt(nodes.leaseExpiresAt, sql`now()`)),
          ),
        ),
      ),
    )
    .returning();
  return row;
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

/** Nodes that should be running but may have lost their job: pending or waiting nodes and expired leases. */
export async function runnableNodes(
  db: Db,
  options: { expiredOnly?: boolean; invocationId?: string; olderThanMs?: number } = {},
): Promise<NodeRow[]> {
  const age = options.olderThanMs ?? 0;
  const stale = sql`${nodes.updatedAt} < now() - ${`${age} milliseconds`}::interval`;
  const leaseGone = or(sql`${nodes.leaseExpiresAt} is null`, lt(nodes.leaseExpiresAt, sql`now()`));
  const condition = options.expiredOnly
    ? and(eq(nodes.status, 'running'), leaseGone)
    : or(
        and(inArray(nodes.status, ['pending', 'waiting']), stale),
        and(eq(nodes.status, 'running'), leaseGone, stale),
      );
  return db
    .select()
    .from(nodes)
    .where(options.invocationId ? and(eq(nodes.invocationId, options.invocationId), condition) : condition);
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
