/** Paused tool calls and their answers (audit trail). */
import { and, desc, eq, inArray, notInArray, sql, type SQL } from 'drizzle-orm';
import { HotStatement, type Db } from '../db/database.js';
import { invocationFromJson } from './step-rows.js';
import { agentSpendFromJson, type AgentSpend } from './spends.js';
import { TERMINAL_INVOCATION, type InvocationRow } from './invocations.js';
import { toolRequests, artifacts, invocations } from '../db/schema.js';

export type ToolRequestRow = typeof toolRequests.$inferSelect;

/** Records pending requests of a node (idempotent: a request already recorded is kept as is). */
export async function insertToolRequestsTx(
  tx: Db,
  rows: (typeof toolRequests.$inferInsert)[],
): Promise<void> {
  if (rows.length === 0) return;
  await tx.insert(toolRequests).values(rows).onConflictDoNothing();
}

/** A request by call id (optionally within one invocation), locked when `forUpdate`. */
export async function findToolRequest(
  db: Db,
  callId: string,
  invocationId?: string,
  forUpdate = false,
): Promise<ToolRequestRow | undefined> {
  const where = invocationId
    ? and(eq(toolRequests.callId, callId), eq(toolRequests.invocationId, invocationId))
    : eq(toolRequests.callId, callId);
  const query = db.select().from(toolRequests).where(where);
  const [row] = forUpdate ? await query.for('update') : await query;
  return row;
}

/**
 * The pending `auth` requests for one credential (app, user, key) in the user's runs that have not ended, oldest
 * first: the calls one consent answers.
 */
export async function pendingAuthRequests(
  db: Db,
  owner: { app: string; userId: string; credentialKey: string },
): Promise<ToolRequestRow[]> {
  return db
    .select({ request: toolRequests })
    .from(toolRequests)
    .innerJoin(invocations, eq(invocations.id, toolRequests.invocationId))
    .where(
      and(
        eq(invocations.app, owner.app),
        eq(invocations.userId, owner.userId),
        notInArray(invocations.status, [...TERMINAL_INVOCATION]),
        eq(toolRequests.kind, 'auth'),
        eq(toolRequests.status, 'pending'),
        sql`${toolRequests.request} -> 'auth' ->> 'credentialKey' = ${owner.credentialKey}`,
      ),
    )
    .orderBy(toolRequests.createdAt)
    .then((rows) => rows.map((r) => r.request));
}

/** Pending requests of an invocation, oldest first. */
export async function pendingToolRequests(db: Db, invocationId: string): Promise<ToolRequestRow[]> {
  return db
    .select()
    .from(toolRequests)
    .where(and(eq(toolRequests.invocationId, invocationId), eq(toolRequests.status, 'pending')))
    .orderBy(toolRequests.createdAt);
}

/** An invocation with its pending requests (oldest first) and its spends: what `engine.get` shows of it. */
export interface InvocationWithPending {
  inv: InvocationRow;
  pending: ToolRequestRow[];
  spends: AgentSpend[];
}

/**
 * SQL: the JSON of {@link InvocationWithPending} for the row `alias` of `invocations` (or of a CTE returning its
 * columns: the leaf completion that ends an invocation sends it with its notification, so `wait` need not read).
 */
export function invocationWithPendingJson(alias: string): SQL {
  const a = sql.raw(alias);
  return sql`json_build_object('inv', row_to_json(${a}),
      'pending', (select json_agg(row_to_json(t) order by t.created_at) from tool_requests t
        where t.invocation_id = ${a}.id and t.status = 'pending'),
      'spends', (select json_agg(row_to_json(s) order by s.agent) from agent_spends s
        where s.invocation_id = ${a}.id))`;
}

/** Reads {@link invocationWithPendingJson}'s JSON; undefined when it is not of that shape. */
export function invocationWithPendingFromJson(found: unknown): InvocationWithPending | undefined {
  if (typeof found !== 'object' || found === null) return undefined;
  const { inv, pending, spends } = found as {
    inv?: Json | null;
    pending?: Json[] | null;
    spends?: Json[] | null;
  };
  if (typeof inv !== 'object' || inv === null) return undefined;
  return {
    inv: invocationFromJson(inv),
    pending: (pending ?? []).map(toolRequestFromJson),
    spends: (spends ?? []).map(agentSpendFromJson),
  };
}

/**
 * An invocation and its pending requests (oldest first) in one statement; undefined when the invocation does not
 * exist.
 */
export async function invocationWithPending(
  db: Db,
  invocationId: string,
): Promise<InvocationWithPending | undefined> {
  const [row] = await INVOCATION_WITH_PENDING.run<{ found: Json | null }>(db, { id: invocationId });
  return invocationWithPendingFromJson(row?.found);
}

const INVOCATION_WITH_PENDING = new HotStatement(
  () =>
    sql`select ${invocationWithPendingJson('i')} as found from invocations i where i.id = ${sql.placeholder('id')}`,
  { batched: true },
);

function toolRequestFromJson(r: Json): ToolRequestRow {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(String(v)));
  return {
    invocationId: r.invocation_id as string,
    callId: r.call_id as string,
    nodePath: r.node_path as string,
    kind: r.kind as string,
    request: r.request as Json,
    response: (r.response as Json | null) ?? null,
    status: r.status as string,
    answeredBy: (r.answered_by as string | null) ?? null,
    answeredAt: date(r.answered_at),
    createdAt: date(r.created_at) as Date,
  };
}

type Json = Record<string, unknown>;

/** Whether any of these requests has been answered since they were read. */
export async function anyAnswered(db: Db, invocationId: string, callIds: string[]): Promise<boolean> {
  if (callIds.length === 0) return false;
  const rows = await db
    .select({ status: toolRequests.status })
    .from(toolRequests)
    .where(and(eq(toolRequests.invocationId, invocationId), inArray(toolRequests.callId, callIds)));
  // Only an answer counts: a request cancelled with its invocation was withdrawn, and a retried run asks anew.
  return rows.some((r) => r.status === 'answered');
}

/** Call ids of a node's requests that were cancelled (withdrawn with their invocation), oldest first. */
export async function cancelledCallIds(db: Db, invocationId: string, nodePath: string): Promise<string[]> {
  const rows = await db
    .select({ callId: toolRequests.callId })
    .from(toolRequests)
    .where(
      and(
        eq(toolRequests.invocationId, invocationId),
        eq(toolRequests.nodePath, nodePath),
        eq(toolRequests.status, 'cancelled'),
      ),
    )
    .orderBy(toolRequests.createdAt);
  return rows.map((r) => r.callId);
}

/** Stores the answer to a request. */
export async function answerToolRequestTx(
  tx: Db,
  invocationId: string,
  callId: string,
  response: Record<string, unknown>,
  by: string | undefined,
): Promise<void> {
  await tx
    .update(toolRequests)
    .set({ status: 'answered', response, answeredBy: by ?? null, answeredAt: sql`now()` })
    .where(and(eq(toolRequests.invocationId, invocationId), eq(toolRequests.callId, callId)));
}

/**
 * Ends a request nobody answered in time (an elicitation past its timeout), storing what it counts as; false when
 * it was no longer pending (answered or cancelled meanwhile).
 */
export async function expireToolRequestTx(
  tx: Db,
  invocationId: string,
  callId: string,
  response: Record<string, unknown>,
): Promise<boolean> {
  const rows = await tx
    .update(toolRequests)
    .set({ status: 'expired', response, answeredAt: sql`now()` })
    .where(
      and(
        eq(toolRequests.invocationId, invocationId),
        eq(toolRequests.callId, callId),
        eq(toolRequests.status, 'pending'),
      ),
    )
    .returning({ callId: toolRequests.callId });
  return rows.length > 0;
}

/**
 * Withdraws requests a stopped attempt left open (elicitations whose call ended with its worker): they can no
 * longer be answered. Only those still pending.
 */
export async function withdrawToolRequestsTx(tx: Db, invocationId: string, callIds: string[]): Promise<void> {
  if (callIds.length === 0) return;
  await tx
    .update(toolRequests)
    .set({ status: 'expired', response: { action: 'cancel', reason: 'the call ended without an answer' } })
    .where(
      and(
        eq(toolRequests.invocationId, invocationId),
        inArray(toolRequests.callId, callIds),
        eq(toolRequests.status, 'pending'),
      ),
    );
}

/** Cancels the pending requests of an invocation. */
export async function cancelToolRequestsTx(tx: Db, invocationId: string): Promise<void> {
  await tx
    .update(toolRequests)
    .set({ status: 'cancelled' })
    .where(and(eq(toolRequests.invocationId, invocationId), eq(toolRequests.status, 'pending')));
}

/** Saves a new version of an artifact; returns the version (1, 2, …). */
export async function saveArtifactTx(
  tx: Db,
  sessionId: string,
  name: string,
  mime: string,
  data: Uint8Array,
): Promise<number> {
  const [row] = await tx
    .select({ max: sql<number>`coalesce(max(${artifacts.version}), 0)` })
    .from(artifacts)
    .where(and(eq(artifacts.sessionId, sessionId), eq(artifacts.name, name)));
  const version = Number(row?.max ?? 0) + 1;
  await tx.insert(artifacts).values({ sessionId, name, version, mime, data });
  return version;
}

/** Loads an artifact's latest or given version. */
export async function loadArtifact(
  db: Db,
  sessionId: string,
  name: string,
  version?: number,
): Promise<{ mime: string; data: Uint8Array; version: number } | undefined> {
  const conditions = [eq(artifacts.sessionId, sessionId), eq(artifacts.name, name)];
  if (version !== undefined) conditions.push(eq(artifacts.version, version));
  const [row] = await db
    .select()
    .from(artifacts)
    .where(and(...conditions))
    .orderBy(desc(artifacts.version))
    .limit(1);
  return row ? { mime: row.mime, data: new Uint8Array(row.data), version: row.version } : undefined;
}
