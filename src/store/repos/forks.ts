/**
 * Forks (engine.fork): the copied history of a new session — events under new ids and new seqs, the session state
 * they add up to, node rows with their checkpoints — and the lookups of an invocation's forks.
 */
import { and, asc, eq, isNotNull } from 'drizzle-orm';
import { newId } from '../../core/ids.js';
import type { Event } from '../../core/event.js';
import type { Db } from '../db/database.js';
import { events, invocations, nodes, sessions } from '../db/schema.js';
import { applyToState, splitAppends, splitDelta } from './state.js';
import type { NodeRow } from './nodes.js';

type Json = Record<string, unknown>;

/** An event to copy into the fork's session, and the invocation it belongs to there (null: an earlier run's). */
export interface CopiedEvent {
  event: Event;
  invocationId: string | null;
}

/**
 * Inserts copies of `copied` (in order) into the new, empty session `sessionId`: each under a new id, seq 1, 2, …;
 * the session's own state becomes what their session-scoped deltas and appends add up to. `app:` and `user:`
 * state is shared with other sessions and is left as it is (a fork must not roll it back); `temp:` keys are never
 * stored in events. Returns the last seq.
 */
export async function copyEventsTx(
  tx: Db,
  sessionId: string,
  copied: readonly CopiedEvent[],
): Promise<number> {
  let state: Json = {};
  const rows = copied.map(({ event, invocationId }, index) => {
    const actions = event.actions as Json;
    const delta = splitDelta(actions.stateDelta ?? {}, 'event.actions.stateDelta');
    const appends = splitAppends((event.actions.appendToState ?? []) as never);
    state = applyToState(state, delta.session, appends.session);
    return {
      sessionId,
      seq: index + 1,
      id: newId('evt'),
      invocationId,
      nodePath: event.nodePath,
      author: event.author,
      branch: event.branch ?? null,
      content: (event.content as Json | undefined) ?? null,
      actions,
      longRunningToolIds: event.longRunningToolIds ?? null,
      errorCode: event.errorCode ?? null,
      errorMessage: event.errorMessage ?? null,
    };
  });
  // Chunks keep each statement's parameter count well under Postgres's 65535.
  for (let i = 0; i < rows.length; i += 500) await tx.insert(events).values(rows.slice(i, i + 500));
  await tx.update(sessions).set({ lastSeq: rows.length, state }).where(eq(sessions.id, sessionId));
  return rows.length;
}

/** A node row of the fork as {@link insertForkNodesTx} writes it. */
export type ForkNode = Pick<
  NodeRow,
  | 'path'
  | 'parentPath'
  | 'agent'
  | 'kind'
  | 'branch'
  | 'status'
  | 'checkpoint'
  | 'escalated'
  | 'output'
  | 'error'
>;

/** Inserts the fork's node rows (attempt 0, no lease, wake 0: the caller wakes the one that must run). */
export async function insertForkNodesTx(
  tx: Db,
  invocationId: string,
  rows: readonly ForkNode[],
): Promise<void> {
  if (rows.length === 0) return;
  await tx.insert(nodes).values(rows.map((row) => ({ ...row, invocationId, attempt: 0, wake: 0 })));
}

/** The forks of an invocation (id, status, where they were forked), oldest first. */
export async function listForks(
  db: Db,
  invocationId: string,
): Promise<{ id: string; status: string; fork: Json | null; createdAt: Date }[]> {
  return db
    .select({
      id: invocations.id,
      status: invocations.status,
      fork: invocations.fork,
      createdAt: invocations.createdAt,
    })
    .from(invocations)
    .where(and(eq(invocations.forkedFrom, invocationId), isNotNull(invocations.forkedFrom)))
    .orderBy(asc(invocations.createdAt));
}
