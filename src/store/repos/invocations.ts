/** Invocation rows: create, read, status transitions, budget. */
import { and, desc, eq, inArray, lt, notInArray, sql } from 'drizzle-orm';
import { AgentloomError } from '../../core/errors.js';
import type { Db } from '../db/database.js';
import { invocations, nodes } from '../db/schema.js';

/** Status of an invocation (SEMANTICS §7). */
export type InvocationStatus = 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
/** Statuses an invocation does not leave on its own. */
export const TERMINAL_INVOCATION: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
/**
 * NOTIFY channel carrying `{id, status}` whenever an invocation's status changes, except when a queued invocation
 * starts in the engine's step statements: nothing waits for that (waiters stop at a settled status, and followers
 * re-read on events), and a NOTIFY would serialise that commit with every other one. The leaf completion that ends
 * an invocation adds `view` (what `engine.get` reads, as tool-requests.ts `invocationWithPendingJson`) when it fits
 * a payload, so `wait` need not read; a listener must match `id` itself (a view names other invocations, e.g. the
 * one it was forked from).
 */
export const INVOCATIONS_CHANNEL = 'agentloom_invocations';

export type InvocationRow = typeof invocations.$inferSelect;

/** Inserts an invocation; with an idempotency key, returns the existing one instead when the key was used. */
export async function insertInvocationTx(
  tx: Db,
  row: typeof invocations.$inferInsert,
): Promise<{ row: InvocationRow; created: boolean }> {
  const inserted = await tx.insert(invocations).values(row).onConflictDoNothing().returning();
  if (inserted[0]) return { row: inserted[0], created: true };
  if (row.idempotencyKey) {
    const [existing] = await tx
      .select()
      .from(invocations)
      .where(and(eq(invocations.app, row.app), eq(invocations.idempotencyKey, row.idempotencyKey)));
    if (existing) return { row: existing, created: false };
  }
  throw new AgentloomError('CONFLICT', `invocation "${row.id}" already exists`);
}

export async function getInvocation(
  db: Db,
  id: string,
  forUpdate = false,
): Promise<InvocationRow | undefined> {
  const query = db.select().from(invocations).where(eq(invocations.id, id));
  const [row] = forUpdate ? await query.for('update') : await query;
  return row;
}

/**
 * An invocation and one of its nodes in one round trip (what a step job needs first); `node` is undefined when
 * the node does not exist, and the result is undefined when the invocation does not.
 */
export async function getInvocationWithNode(
  db: Db,
  id: string,
  path: string,
): Promise<{ inv: InvocationRow; node: typeof nodes.$inferSelect | undefined } | undefined> {
  const [row] = await db
    .select({ inv: invocations, node: nodes })
    .from(invocations)
    .leftJoin(nodes, and(eq(nodes.invocationId, invocations.id), eq(nodes.path, path)))
    .where(eq(invocations.id, id));
  return row && { inv: row.inv, node: row.node ?? undefined };
}

/** Sets status (and other fields) and notifies followers in the same transaction. */
export async function setInvocationStatusTx(
  tx: Db,
  id: string,
  status: InvocationStatus,
  fields: Partial<Pick<InvocationRow, 'output' | 'error' | 'escalated' | 'maxLlmCalls'>> = {},
  options: { unlessEnded?: boolean } = {},
): Promise<boolean> {
  const ended = TERMINAL_INVOCATION.has(status);
  // One statement: the change and its NOTIFY (sent only when a row changed).
  const rows = await tx
    .update(invocations)
    .set({
      status,
      ...fields,
      updatedAt: sql`now()`,
      endedAt: ended ? sql`now()` : null,
      ...(ended ? { tempState: {} } : {}),
    })
    .where(
      options.unlessEnded
        ? and(eq(invocations.id, id), notInArray(invocations.status, [...TERMINAL_INVOCATION]))
        : eq(invocations.id, id),
    )
    .returning({
      notified: sql`pg_notify(${INVOCATIONS_CHANNEL}, ${JSON.stringify({ id, status })})::text`,
    });
  return rows.length > 0;
}

/** Counts one model call; false when the budget is spent. */
export async function reserveLlmCall(
  db: Db,
  id: string,
): Promise<{ ok: boolean; used: number; max: number }> {
  const [row] = await db
    .update(invocations)
    .set({ llmCalls: sql`${invocations.llmCalls} + 1` })
    .where(and(eq(invocations.id, id), lt(invocations.llmCalls, invocations.maxLlmCalls)))
    .returning({ used: invocations.llmCalls, max: invocations.maxLlmCalls });
  if (row) return { ok: true, ...row };
  const current = await getInvocation(db, id);
  return { ok: false, used: current?.llmCalls ?? 0, max: current?.maxLlmCalls ?? 0 };
}

/** Options of {@link listInvocations}. */
export interface ListInvocationsOptions {
  app?: string;
  status?: string;
  userId?: string;
  limit?: number;
}

/** Invocations, newest first. */
export async function listInvocations(
  db: Db,
  options: ListInvocationsOptions = {},
): Promise<InvocationRow[]> {
  const conditions = [];
  if (options.app) conditions.push(eq(invocations.app, options.app));
  if (options.status) conditions.push(eq(invocations.status, options.status));
  if (options.userId) conditions.push(eq(invocations.userId, options.userId));
  return db
    .select()
    .from(invocations)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(desc(invocations.createdAt))
    .limit(options.limit ?? 50);
}

/**
 * Claims the handling of a run's end (its trace, afterRunCallback): the row for exactly one caller per end — the
 * run ended (`ended_at` set) after its end was last handled — when its app is one of `apps` (a process claims only
 * the ends it has the plugins for). Committed before anything is called, so a crash between the claim and the hooks
 * loses them (at most once), never runs them twice. A retried run that ends again is claimed again (its new
 * `ended_at` is later).
 */
export async function claimRunEnd(
  db: Db,
  id: string,
  apps: readonly string[],
): Promise<InvocationRow | undefined> {
  if (apps.length === 0) return undefined;
  const [row] = await db
    .update(invocations)
    .set({ runEndHandledAt: sql`greatest(now(), ${invocations.endedAt})` })
    .where(
      and(
        eq(invocations.id, id),
        sql`${invocations.endedAt} > ${invocations.runEndHandledAt}`,
        inArray(invocations.app, [...apps]),
      ),
    )
    .returning();
  return row;
}

/**
 * Ids of runs of `apps` that ended within the last hour and whose end is not handled yet (the process that ended
 * them died before its claim), oldest first.
 */
export async function unhandledRunEnds(db: Db, apps: readonly string[], limit: number): Promise<string[]> {
  if (apps.length === 0) return [];
  const rows = await db
    .select({ id: invocations.id })
    .from(invocations)
    .where(
      and(
        sql`${invocations.endedAt} > ${invocations.runEndHandledAt}`,
        // Recent ends only: runs that ended while no process handled run ends (no tracing, no afterRunCallback)
        // are not handled long after by an engine that starts with a plugin.
        sql`${invocations.endedAt} > now() - interval '1 hour'`,
        inArray(invocations.app, [...apps]),
      ),
    )
    .orderBy(invocations.endedAt)
    .limit(limit);
  return rows.map((r) => r.id);
}

/**
 * Marks that the plugins' beforeRunCallback answered for run `id`, in the caller's transaction (with the answer's
 * event, if it gave one); false when another step marked it first (its answer stands, this one is dropped).
 */
export async function markBeforeRunTx(tx: Db, id: string): Promise<boolean> {
  const rows = await tx
    .update(invocations)
    .set({ beforeRunAt: sql`now()` })
    .where(and(eq(invocations.id, id), sql`${invocations.beforeRunAt} is null`))
    .returning({ id: invocations.id });
  return rows.length > 0;
}
