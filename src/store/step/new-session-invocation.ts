/**
 * The enqueue of an invocation in a new session as one autocommit statement: the session, the invocation, the
 * user event (seq 1) and the root node. Everything else of an enqueue takes the transactional path (enqueue.ts).
 */
import { sql } from 'drizzle-orm';
import { queryPrepared, type Db } from '../db/database.js';
import { jsonOrNull, type EventInsert, type Json } from '../repos/step-rows.js';

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
    /** The run's budget (checked by the caller); null: none. */
    budget: Json | null;
    createdBy: string | null;
    /** The caller's W3C trace context, checked by the caller. */
    traceparent: string | null;
  };
  /** The user event (prepared and validated by the caller); stored as seq 1. */
  event: EventInsert;
  root: { path: string; agent: string; kind: string };
  /**
   * The root's first advance, written here (engine/step/root-start.ts): the root `running` with this checkpoint,
   * and these leaves under it `pending` (wake 1). Absent: the root `pending`, for its job to advance.
   */
  rootStart?: {
    checkpoint: Json;
    leaves: { path: string; agent: string; kind: string; branch: string | null }[];
  };
  /**
   * Queue jobs to add in the same statement (a queue in this database: see the queue's `JobsInStatement`):
   * `addCall` adds one from the jsonb `j`, one of `entries`. They commit with the invocation, or not at all.
   */
  jobs?: { addCall: string; entries: Record<string, unknown>[] };
}

/**
 * An invocation in a new session, in one statement: the session (its first seq taken), the invocation (`queued`),
 * the user event as seq 1, and the root node (`pending`, wake 1; or advanced with its first leaves, see `rootStart`),
 * and `jobs` when given. Returns the root's wake number. No NOTIFY: no one
 * can follow a session before it exists (see `sessions.followed_until`).
 * An existing session, an idempotency key or state beyond the session's take the transactional path.
 */
export async function insertInvocationInNewSession(db: Db, input: NewSessionInvocation): Promise<number> {
  const { invocation: inv, event: e, rootStart: start } = input;
  const [row] = await queryPrepared<{ wake: string | number }>(
    db,
    sql`with s as (
        insert into sessions (id, app, user_id, state, last_seq)
        values (${input.sessionId}, ${input.app}, ${input.userId}, ${JSON.stringify(input.sessionState)}::jsonb, 1)
        returning id
      ),
      i as (
        insert into invocations (id, app, session_id, user_id, root_agent, definition_hash, status, input,
                                 max_llm_calls, budget, created_by, traceparent)
        select ${inv.id}, ${input.app}, s.id, ${input.userId}, ${inv.rootAgent}, ${inv.definitionHash}, 'queued',
               ${JSON.stringify(inv.input)}::jsonb, ${inv.maxLlmCalls}::int, ${jsonOrNull(inv.budget)}::jsonb, ${inv.createdBy}, ${inv.traceparent}
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
        insert into nodes (invocation_id, path, parent_path, agent, kind, branch, status, checkpoint, wake)
        select i.id, ${input.root.path}, null, ${input.root.agent}, ${input.root.kind}, null,
               ${start ? 'running' : 'pending'}, ${JSON.stringify(start?.checkpoint ?? {})}::jsonb, 1
        from i
        union all
        select i.id, c->>'path', ${input.root.path}, c->>'agent', c->>'kind', c->>'branch', 'pending', '{}'::jsonb, 1
        from i, jsonb_array_elements(${JSON.stringify(start?.leaves ?? [])}::jsonb) c
        returning wake
      )${
        input.jobs
          ? sql`,
      q as (
        select count(${sql.raw(input.jobs.addCall)}) as added
        from i, jsonb_array_elements(${JSON.stringify(input.jobs.entries)}::jsonb) j
      )
      select (select max(wake) from n) as wake, (select added from q) as added`
          : sql`
      select (select max(wake) from n) as wake`
      }`,
    { batched: true },
  );
  return Number(row?.wake ?? 1);
}
