/**
 * Read queries of the service surface beyond the Engine's public methods: a page of invocations by cursor (the
 * HTTP API's list), the calls waiting across invocations (the console's inbox), an invocation's audit trail of
 * requests, the counts `/metrics` reports, and the database half of `/readyz`.
 */
import { and, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import type { InvocationRow } from './invocations.js';
import type { ToolRequestRow } from './tool-requests.js';
import { invocations, toolRequests } from '../db/schema.js';

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

/** A built page statement: awaiting it runs it; `toSQL()` shows it. */
export type PageQuery = PromiseLike<{ row: InvocationRow; createdAtText: string }[]> & {
  toSQL(): { sql: string; params: unknown[] };
};

/**
 * The statement behind {@link listInvocationsPage} (exported so that tests can EXPLAIN it); undefined when no row
 * can match (a key that sees no app). Fetches one row more than `limit` to know whether a next page exists.
 */
export function invocationsPageQuery(db: Db, options: InvocationPageOptions): PageQuery | undefined {
  const conditions: SQL[] = [];
  if (options.apps !== undefined) {
    if (options.apps.length === 0) return undefined;
    conditions.push(inArray(invocations.app, [...options.apps]));
  }
  if (options.app !== undefined) conditions.push(eq(invocations.app, options.app));
  if (options.status !== undefined) conditions.push(eq(invocations.status, options.status));
  if (options.userId !== undefined) conditions.push(eq(invocations.userId, options.userId));
  if (options.cursor) {
    const { createdAt, id } = options.cursor;
    conditions.push(sql`(${invocations.createdAt}, ${invocations.id}) < (${createdAt}::timestamptz, ${id})`);
  }
  return db
    .select({ row: invocations, createdAtText })
    .from(invocations)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .orderBy(desc(invocations.createdAt), desc(invocations.id))
    .limit(options.limit + 1);
}

/**
 * Invocations matching the filters, newest first (ties broken by id), `limit` at a time. The order is served by
 * the indexes `invocations_created_idx` (created_at desc, id desc) and `invocations_app_created_idx` (app, …), so
 * a page reads about `limit + 1` index entries however many invocations there are.
 */
export async function listInvocationsPage(db: Db, options: InvocationPageOptions): Promise<InvocationPage> {
  const query = invocationsPageQuery(db, options);
  if (!query) return { rows: [], next: undefined };
  const rows = await query;
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

/** Options of {@link listPendingCalls}. */
export interface PendingCallsOptions {
  app?: string;
  /** Only these apps (a key that sees some apps); an empty list matches nothing. */
  apps?: readonly string[];
  kind?: string;
  limit: number;
}

/** A pending call with the invocation it pauses. */
export interface PendingCallRow {
  request: ToolRequestRow;
  invocation: Pick<InvocationRow, 'id' | 'app' | 'userId' | 'sessionId' | 'status'>;
}

/**
 * Calls waiting for an answer across invocations (the approvals inbox), oldest first, `limit + 1` at most (the
 * caller knows there are more). Served by the partial index `tool_requests_pending_idx`: answered calls, however
 * many, are never read.
 */
export async function listPendingCalls(db: Db, options: PendingCallsOptions): Promise<PendingCallRow[]> {
  const conditions: SQL[] = [eq(toolRequests.status, 'pending')];
  if (options.apps !== undefined) {
    if (options.apps.length === 0) return [];
    conditions.push(inArray(invocations.app, [...options.apps]));
  }
  if (options.app !== undefined) conditions.push(eq(invocations.app, options.app));
  if (options.kind !== undefined) conditions.push(eq(toolRequests.kind, options.kind));
  return db
    .select({
      request: toolRequests,
      invocation: {
        id: invocations.id,
        app: invocations.app,
        userId: invocations.userId,
        sessionId: invocations.sessionId,
        status: invocations.status,
      },
    })
    .from(toolRequests)
    .innerJoin(invocations, eq(invocations.id, toolRequests.invocationId))
    .where(and(...conditions))
    .orderBy(toolRequests.createdAt, toolRequests.callId)
    .limit(options.limit + 1);
}

/** Every request of an invocation — pending, answered and withdrawn — oldest first: its audit trail. */
export async function invocationToolRequests(db: Db, invocationId: string): Promise<ToolRequestRow[]> {
  return db
    .select()
    .from(toolRequests)
    .where(eq(toolRequests.invocationId, invocationId))
    .orderBy(toolRequests.createdAt, toolRequests.callId);
}

/** Resolves when the database answers a query (the database half of `/readyz`). */
export async function pingDatabase(db: Db): Promise<void> {
  await db.execute(sql`select 1`);
}
