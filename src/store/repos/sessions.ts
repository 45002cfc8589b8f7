import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import { AgentloomError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Db } from '../db/database.js';
import { appStates, events, invocations, sessions, userStates } from '../db/schema.js';
import { applyToState, assertPlainObject, mergeScopes, splitDelta } from './state.js';

type Json = Record<string, unknown>;

/** A session as read: `state` merges session, `app:` and `user:` keys. */
export interface SessionRecord {
  id: string;
  app: string;
  userId: string;
  state: Json;
  lastSeq: number;
  createdAt: Date;
  updatedAt: Date;
}

/** Input of {@link createSessionTx}. */
export interface CreateSessionInput {
  app: string;
  userId: string;
  id?: string;
  /** Initial state; scoped keys go to their scope rows (`temp:` keys are refused: there is no invocation yet). */
  state?: Json;
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new AgentloomError('VALIDATION', `${field} must be a non-empty string`, { details: { field } });
  }
  return value;
}

/** Creates a session (and applies its initial state) inside the caller's transaction. */
export async function createSessionTx(tx: Db, input: CreateSessionInput): Promise<SessionRecord> {
  const app = requireText(input.app, 'app');
  const userId = requireText(input.userId, 'userId');
  const id = input.id === undefined ? newId('ses') : requireText(input.id, 'sessionId');
  const state = input.state ?? {};
  assertPlainObject(state, 'state');
  const delta = splitDelta(state, 'state');
  if (Object.keys(delta.temp).length > 0) {
    throw new AgentloomError(
      'VALIDATION',
      'state: temp: keys cannot be set on a new session; set them on an invocation',
      {
        details: { field: 'state' },
      },
    );
  }
  const inserted = await tx
    .insert(sessions)
    .values({ id, app, userId, state: delta.session })
    .onConflictDoNothing()
    .returning({ id: sessions.id });
  if (inserted.length === 0) {
    throw new AgentloomError('CONFLICT', `session "${id}" already exists; omit the id to create a new one`, {
      details: { sessionId: id },
    });
  }
  if (Object.keys(delta.app).length > 0) {
    await tx
      .insert(appStates)
      .values({ app, state: delta.app })
      .onConflictDoUpdate({
        target: appStates.app,
        set: { state: sql`${appStates.state} || excluded.state` },
      });
  }
  if (Object.keys(delta.user).length > 0) {
    await tx
      .insert(userStates)
      .values({ app, userId, state: delta.user })
      .onConflictDoUpdate({
        target: [userStates.app, userStates.userId],
        set: { state: sql`${userStates.state} || excluded.state` },
      });
  }
  const session = await getSession(tx, id);
  if (!session) throw new AgentloomError('INTERNAL', `session "${id}" vanished after insert`);
  return session;
}

/** Sessions joined with their app and user state rows, for reads that merge the scopes. */
function selectSessionsWithScopes(db: Db) {
  return db
    .select({ session: sessions, appState: appStates.state, userState: userStates.state })
    .from(sessions)
    .leftJoin(appStates, eq(appStates.app, sessions.app))
    .leftJoin(userStates, and(eq(userStates.app, sessions.app), eq(userStates.userId, sessions.userId)));
}

function toSessionRecord(row: {
  session: typeof sessions.$inferSelect;
  appState: Json | null;
  userState: Json | null;
}): SessionRecord {
  const { session } = row;
  return {
    id: session.id,
    app: session.app,
    userId: session.userId,
    state: mergeScopes({ session: session.state, app: row.appState ?? {}, user: row.userState ?? {} }),
    lastSeq: session.lastSeq,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
  };
}

/** A session with its merged state, or undefined. */
export async function getSession(db: Db, id: string): Promise<SessionRecord | undefined> {
  const [row] = await selectSessionsWithScopes(db).where(eq(sessions.id, id));
  return row && toSessionRecord(row);
}

/**
 * Holds a session's key until the transaction ends (`FOR KEY SHARE`): retention (store/repos/prune.ts) cannot
 * delete it meanwhile, and a session being deleted right now is waited for and then found gone.
 */
export async function lockSessionKeyTx(tx: Db, id: string): Promise<void> {
  await tx.execute(sql`select 1 from sessions where id = ${id} for key share`);
}

/**
 * The state an agent of an invocation sees: session, `app:`, `user:` and the invocation's `temp:` keys (given by
 * id, or as the invocation's already-read temp state).
 */
export async function readInvocationState(
  db: Db,
  sessionId: string,
  invocation?: string | { temp: Json },
): Promise<Json> {
  const session = await getSession(db, sessionId);
  if (!session) {
    throw new AgentloomError('NOT_FOUND', `session "${sessionId}" does not exist`, {
      details: { sessionId },
    });
  }
  if (invocation === undefined) return session.state;
  // The caller may already hold the invocation's temp state (read with the invocation row): no second query.
  const temp =
    typeof invocation === 'string'
      ? (
          await db
            .select({ temp: invocations.tempState })
            .from(invocations)
            .where(eq(invocations.id, invocation))
        )[0]?.temp
      : invocation.temp;
  return applyToState(session.state, mergeScopes({ temp: temp ?? {} }), []);
}

/** Options of {@link listSessions}. */
export interface ListSessionsOptions {
  app: string;
  userId?: string;
  limit?: number;
}

/** Sessions of an app (optionally of one user), most recently updated first. */
export async function listSessions(db: Db, options: ListSessionsOptions): Promise<SessionRecord[]> {
  const where =
    options.userId === undefined
      ? eq(sessions.app, options.app)
      : and(eq(sessions.app, options.app), eq(sessions.userId, options.userId));
  const rows = await selectSessionsWithScopes(db)
    .where(where)
    .orderBy(desc(sessions.updatedAt))
    .limit(options.limit ?? 100);
  return rows.map(toSessionRecord);
}

/**
 * The newest author among `authors` of a session's events, skipping checkpoint and end-of-agent events (which say
 * where a workflow stands, not who spoke): whom the conversation was with last (ADK's Runner looks the same way).
 * One indexed query scanning the session's events newest first.
 */
export async function lastAuthorAmong(
  db: Db,
  sessionId: string,
  authors: readonly string[],
): Promise<string | undefined> {
  if (authors.length === 0) return undefined;
  const [row] = await db
    .select({ author: events.author })
    .from(events)
    .where(
      and(
        eq(events.sessionId, sessionId),
        inArray(events.author, [...authors]),
        sql`coalesce(jsonb_typeof(${events.actions} -> 'agentState'), 'null') = 'null'`,
        sql`coalesce((${events.actions} ->> 'endOfAgent')::boolean, false) = false`,
      ),
    )
    .orderBy(desc(events.seq))
    .limit(1);
  return row?.author;
}

/** How long a follower's registration on a session lasts unless renewed (see `sessions.followed_until`). */
export const FOLLOW_TTL_MS = 120_000;

/**
 * Marks sessions as followed for {@link FOLLOW_TTL_MS} from now: their events are NOTIFYed until then. The
 * UPDATE takes each session's row lock, as every append does: an append that locked the row first has committed
 * before this returns (a read after it sees the event), and one that locks it after sees the mark.
 */
export async function markFollowed(db: Db, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db
    .update(sessions)
    .set({
      followedUntil: sql`greatest(${sessions.followedUntil}, now() + make_interval(secs => ${FOLLOW_TTL_MS / 1000}))`,
    })
    .where(inArray(sessions.id, [...sessionIds]));
}

/**
 * Deletes a session with its events, invocations, nodes, requests and artifacts (all cascade), unless one of its
 * invocations has not ended: a worker may be running it, or a human may be about to answer it. Returns whether a
 * session was deleted; CONFLICT names the invocation to cancel first.
 */
export async function deleteSessionTx(tx: Db, id: string): Promise<boolean> {
  const [live] = await tx
    .select({ id: invocations.id, status: invocations.status })
    .from(invocations)
    .where(and(eq(invocations.sessionId, id), inArray(invocations.status, ['queued', 'running', 'paused'])))
    .limit(1);
  if (live) {
    throw new AgentloomError(
      'CONFLICT',
      `session "${id}" has a ${live.status} invocation (${live.id}): cancel it first`,
      { details: { sessionId: id, invocationId: live.id } },
    );
  }
  const deleted = await tx.delete(sessions).where(eq(sessions.id, id)).returning({ id: sessions.id });
  return deleted.length > 0;
}
