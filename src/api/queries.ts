/**
 * The reads the HTTP API needs beyond the Engine's public methods: a page of invocations by cursor, the counts
 * `/metrics` reports, and the database half of `/readyz`.
 *
 * These are repository functions (the only SQL of the api/ folder); they belong under store/ and live here only
 * until they are moved there (same signatures, so only the import changes).
 */
import { and, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../store/database.js';
import type { InvocationRow } from '../store/invocations.js';
import { invocations, toolRequests } from '../store/schema.js';

/** Where a page of invocations starts: strictly older than this (created at, id) pair. */
export interface InvocationCursor {
  /** `created_at` as PostgreSQL prints it in UTC with microseconds (a JS Date would lose them). */
  createdAt: string;
  id: string;
}

/** Options of {@link listInvocationsPage}. */
export interface InvocationPageOptions {
  app?: string;
  /** Only these apps (a key that sees some apps); an empty list matches nothing. */
  apps?: readonly string[];
  status?: string;
  userId?: string;
  limit: number;
  cursor?: InvocationCursor;
}

/** A page of invocations, newest first, and the cursor of the next page (none after the last). */
export interface InvocationPage {
  rows: InvocationRow[];
  next: InvocationCursor | undefined;
}

/** `created_at` in UTC with microseconds, e.g. `2026-01-02T03:04:05.123456Z` (stable and exact as a cursor). */
const createdAtText = sql<string>`to_char(${invocations.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Invocations matching the filters, newest first (ties broken by id), `limit` at a time. */
export async function listInvocationsPage(db: Db, options: InvocationPageOptions): Promise<InvocationPage> {
  const conditions: SQL[] = [];
  if (options.apps !== undefined) {
    if (options.apps.length === 0) return { rows: [], next: undefined };
    conditions.push(inArray(invocations.app, [...options.apps]));
  }
  if (options.app !== undefined) conditions.push(eq(invocations.app, options.app));
  if (options.status !== undefined) conditions.push(eq(invocations.status, options.status));
  if (options.userId !== undefined) conditions.push(eq(invocations.userId, options.userId));
  if (options.cursor) {
    const { createdAt, id } = options.cursor;
    conditions.push(sql`(${invocations.createdAt}, ${invocations.id}) < (${createdAt}::timestamptz, ${id})`);
  }
  const rows = await db
    .select({ row: invocations, createdAtText })
    .from(invocations)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .orderBy(desc(invocations.createdAt), desc(invocations.id))
    .limit(options.limit + 1);
  const page = rows.slice(0, options.limit);
  const last = page[page.length - 1];
  return {
    rows: page.map((r) => r.row),
    next:
      rows.length > options.limit && last ? { createdAt: last.createdAtText, id: last.row.id } : undefined,
  };
}

/** Invocations by app and status (the `agentloom_invocations` gauge). */
export async function countInvocations(db: Db): Promise<{ app: string; status: string; count: number }[]> {
  return db
    .select({ app: invocations.app, status: invocations.status, count: count() })
    .from(invocations)
    .groupBy(invocations.app, invocations.status);
}

/** Pending calls (confirmations, long-running, in-doubt) by app and kind (the `agentloom_pending_calls` gauge). */
export async function countPendingCalls(db: Db): Promise<{ app: string; kind: string; count: number }[]> {
  return db
    .select({ app: invocations.app, kind: toolRequests.kind, count: count() })
    .from(toolRequests)
    .innerJoin(invocations, eq(invocations.id, toolRequests.invocationId))
    .where(eq(toolRequests.status, 'pending'))
    .groupBy(invocations.app, toolRequests.kind);
}

/** Resolves when the database answers a query (the database half of `/readyz`). */
export async function pingDatabase(db: Db): Promise<void> {
  await db.execute(sql`select 1`);
}
