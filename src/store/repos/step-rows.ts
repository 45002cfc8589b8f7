/**
 * Rows and SQL fragments shared by the hot step statements (store/step/: step-claims, step-advance,
 * leaf-completion, workflow-end, branch-ends, new-session-invocation) and by tool-requests.ts: JSON rows mapped to
 * drizzle row types, the state a step sees, the event row the statements insert. No statement of its own. Here in
 * repos/, beside the tables it maps, so repositories and step statements both import it downward.
 */
import { sql } from 'drizzle-orm';
import type { EventRow } from './events.js';
import type { InvocationRow } from './invocations.js';
import type { NodeRow } from './nodes.js';
import { mergeScopes } from './state.js';

export type Json = Record<string, unknown>;

/** Leaf kinds: the nodes a worker claims (workflow nodes are advanced, never claimed). */
export const LEAF_KINDS = sql`('llm', 'custom')`;
/** A named value of a {@link HotStatement}. */
export const P = (name: string) => sql.placeholder(name);

export const toDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
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
    waiting: (r.waiting as Json | null) ?? null,
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
    traceparent: (r.traceparent as string | null) ?? null,
    forkedFrom: (r.forked_from as string | null) ?? null,
    fork: (r.fork as Json | null) ?? null,
    budget: (r.budget as Json | null) ?? null,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
    endedAt: toDateOrNull(r.ended_at),
    runEndHandledAt: toDateOrNull(r.run_end_handled_at),
    beforeRunAt: toDateOrNull(r.before_run_at),
  };
}

/** The state a step sees, from the scope rows and the invocation's temp state read with it. */
export function stateFromJson(scopes: Json | null | undefined): Json {
  const s = scopes ?? {};
  return mergeScopes({
    session: (s.session as Json | null) ?? {},
    app: (s.app as Json | null) ?? {},
    user: (s.user as Json | null) ?? {},
    temp: (s.temp as Json | null) ?? {},
  });
}

/** SQL for the merged scopes of the invocation in the relation `inv` (with session_id and temp_state). */
export const SCOPES_OF_INV = sql`(
  select jsonb_build_object('session', s.state, 'app', a.state, 'user', u.state, 'temp', inv.temp_state)
  from inv
  join sessions s on s.id = inv.session_id
  left join app_states a on a.app = s.app
  left join user_states u on u.app = s.app and u.user_id = s.user_id)`;

export const leaseInterval = (leaseMs: number) => `${Math.max(1, Math.round(leaseMs))} milliseconds`;

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

/** A JSON parameter, or SQL null. */
export const jsonOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);
