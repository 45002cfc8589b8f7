/**
 * Appending and reading events. An append is atomic: it assigns the next per-session `seq` under the session row
 * lock (so seq order is commit order), applies the event's `stateDelta` and `appendToState` to the right scope
 * rows, inserts the event and NOTIFYs followers — all or nothing; one statement when no state changes.
 */
import { and, asc, eq, gt, sql, type SQL } from 'drizzle-orm';
import { AgentloomError } from '../../core/errors.js';
import { textOf } from '../../core/content.js';
import { eventSchema, isFinalResponse, newEventSchema, type Event, type NewEvent } from '../../core/event.js';
import { newId } from '../../core/ids.js';
import { HotStatement, type Db } from '../db/database.js';
import { runningByKey } from './nodes.js';
import { appStates, events, invocations, nodes, sessions, userStates } from '../db/schema.js';
import { inTransaction } from '../db/tx.js';
import { applyToState, splitAppends, splitDelta, touches } from './state.js';
import { zodIssues } from '../../core/validation.js';

/** The NOTIFY channel that carries `{sessionId, seq, invocationId}` of every stored event. */
export const EVENTS_CHANNEL = 'agentloom_events';

/** Where an event is appended and who produced it. */
export interface AppendEventInput {
  sessionId: string;
  /** Required when the delta has `temp:` keys (they live on the invocation). */
  invocationId?: string;
  nodePath?: string;
  /** Stamped onto the event unless it carries its own branch. */
  branch?: string;
  event: NewEvent;
  /**
   * Write only if the node `path` of the invocation is still `running` under this `attempt` (the fencing token);
   * otherwise throw FENCED and store nothing.
   */
  fence?: { path: string; attempt: number };
}

/**
 * Whether an append's NOTIFY is sent: some process follows the session (see `sessions.followed_until`). Read in
 * the RETURNING of the statement that bumps the session's seq, so from the row version that statement locked.
 */
export const FOLLOWED = sql`coalesce(followed_until > now(), false) as followed`;
const FOLLOWED_COLUMN = sql<boolean>`coalesce(${sessions.followedUntil} > now(), false)`;

/** The payload of an {@link EVENTS_CHANNEL} notification. */
export interface EventNotice {
  sessionId: string;
  seq: number;
  invocationId: string | null;
}

type Json = Record<string, unknown>;

export interface PreparedEvent {
  row: EventRow;
  delta: ReturnType<typeof splitDelta>;
  appends: ReturnType<typeof splitAppends>;
  changesState: boolean;
}

export type EventRow = Omit<typeof events.$inferInsert, 'seq' | 'createdAt'> & {
  sessionId: string;
  id: string;
};

/** Validates an event and builds its row. Throws VALIDATION before anything is written. */
export function prepareEvent(input: AppendEventInput): PreparedEvent {
  const parsed = newEventSchema.safeParse(input.event);
  if (!parsed.success) {
    throw new AgentloomError('VALIDATION', `event is malformed: ${zodIssues(parsed.error)}`, {
      details: { field: 'event' },
      cause: parsed.error,
    });
  }
  const ev = parsed.data;
  const delta = splitDelta(ev.actions.stateDelta, 'event.actions.stateDelta');
  const appends = splitAppends(ev.actions.appendToState ?? []);
  if (touches(delta, appends, 'temp') && input.invocationId === undefined) {
    throw new AgentloomError('VALIDATION', 'temp: state keys need an invocation; pass invocationId', {
      details: { field: 'invocationId' },
    });
  }
  if (input.fence && input.invocationId === undefined) {
    throw new AgentloomError('VALIDATION', 'a fenced append needs invocationId', {
      details: { field: 'invocationId' },
    });
  }
  // temp: keys are kept on the invocation only, never in stored history (as ADK trims them).
  const storedDelta = Object.fromEntries(
    Object.entries(ev.actions.stateDelta).filter(([k]) => !k.startsWith('temp:')),
  );
  const storedAppends = ev.actions.appendToState?.filter((a) => !a.key.startsWith('temp:'));
  const actions = { ...ev.actions, stateDelta: storedDelta, appendToState: storedAppends };
  if (!storedAppends?.length) delete actions.appendToState;
  const row: EventRow = {
    sessionId: input.sessionId,
    id: ev.id ?? newId('evt'),
    invocationId: input.invocationId ?? null,
    nodePath: input.nodePath ?? '',
    author: ev.author,
    branch: ev.branch ?? input.branch ?? null,
    content: (ev.content as Json | undefined) ?? null,
    actions: actions as Json,
    longRunningToolIds: ev.longRunningToolIds ?? null,
    errorCode: ev.errorCode ?? null,
    errorMessage: ev.errorMessage ?? null,
  };
  const changesState = (['session', 'app', 'user', 'temp'] as const).some((scope) =>
    touches(delta, appends, scope),
  );
  return { row, delta, appends, changesState };
}

/**
 * Appends one event: a single statement when it changes no state (the common case), else one transaction.
 * Throws VALIDATION / NOT_FOUND / FENCED without writing anything.
 */
export async function appendEvent(db: Db, input: AppendEventInput): Promise<Event> {
  const prepared = prepareEvent(input);
  if (!prepared.changesState) return insertPlainEvent(db, prepared.row, input.fence);
  return inTransaction(db, (tx) => appendPrepared(tx, input, prepared));
}

/**
 * Stores an event already prepared by {@link prepareEvent} that changes no state (one statement; in the caller's
 * transaction when `db` is one). Throws NOT_FOUND / FENCED without writing.
 */
export function appendPlainPrepared(
  db: Db,
  prepared: PreparedEvent,
  fence?: { path: string; attempt: number },
): Promise<Event> {
  if (prepared.changesState) {
    throw new AgentloomError('INTERNAL', 'appendPlainPrepared got an event that changes state');
  }
  return insertPlainEvent(db, prepared.row, fence);
}

/** Appends one event inside the caller's transaction. Throws VALIDATION / NOT_FOUND / FENCED before writing. */
export async function appendEventTx(tx: Db, input: AppendEventInput): Promise<Event> {
  const prepared = prepareEvent(input);
  if (!prepared.changesState) return insertPlainEvent(tx, prepared.row, input.fence);
  return appendPrepared(tx, input, prepared);
}

async function appendPrepared(tx: Db, input: AppendEventInput, prepared: PreparedEvent): Promise<Event> {
  const { row, delta, appends } = prepared;
  if (input.fence) await lockFence(tx, input.invocationId as string, input.fence);
  // The UPDATE locks the session row until commit: concurrent appends to this session queue here.
  const [session] = await tx
    .update(sessions)
    .set({ lastSeq: sql`${sessions.lastSeq} + 1`, updatedAt: sql`now()` })
    .where(eq(sessions.id, input.sessionId))
    .returning({
      seq: sessions.lastSeq,
      state: sessions.state,
      app: sessions.app,
      userId: sessions.userId,
      followed: FOLLOWED_COLUMN,
    });
  if (!session) throw sessionNotFound(input.sessionId);
  if (touches(delta, appends, 'session')) {
    await tx
      .update(sessions)
      .set({ state: applyToState(session.state, delta.session, appends.session) })
      .where(eq(sessions.id, input.sessionId));
  }
  if (touches(delta, appends, 'app')) await applyAppState(tx, session.app, delta.app, appends.app);
  if (touches(delta, appends, 'user')) {
    await applyUserState(tx, session.app, session.userId, delta.user, appends.user);
  }
  if (touches(delta, appends, 'temp')) {
    await applyTempState(tx, input.invocationId as string, delta.temp, appends.temp);
  }
  const [inserted] = await tx
    .insert(events)
    .values({ ...row, seq: session.seq })
    .returning({ createdAt: events.createdAt });
  const notice: EventNotice = {
    sessionId: input.sessionId,
    seq: session.seq,
    invocationId: row.invocationId ?? null,
  };
  if (session.followed) await tx.execute(sql`select pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify(notice)})`);
  return toStoredEvent(row, session.seq, inserted?.createdAt ?? new Date());
}

function fencedError(path: string, attempt: number): AgentloomError {
  return new AgentloomError(
    'FENCED',
    `node ${path} attempt ${attempt} was superseded or stopped; its write was refused`,
    {
      details: { path, attempt },
    },
  );
}

/** Locks the node row and checks the fencing token. */
async function lockFence(
  tx: Db,
  invocationId: string,
  fence: { path: string; attempt: number },
): Promise<void> {
  const [node] = await tx
    .select({ attempt: nodes.attempt, status: nodes.status })
    .from(nodes)
    .where(and(eq(nodes.invocationId, invocationId), eq(nodes.path, fence.path)))
    .for('update');
  if (!node || node.attempt !== fence.attempt || node.status !== 'running')
    throw fencedError(fence.path, fence.attempt);
}

function sessionNotFound(sessionId: string): AgentloomError {
  return new AgentloomError('NOT_FOUND', `session "${sessionId}" does not exist; create it first`, {
    details: { sessionId },
  });
}

/**
 * The event just written. Not validated again: its fields passed `newEventSchema` on the way in (rows read back
 * from the database are validated by {@link toEvent}).
 */
export function toStoredEvent(row: EventRow, seq: number, createdAt: Date): Event {
  return eventFields({
    ...row,
    nodePath: row.nodePath ?? '',
    invocationId: row.invocationId ?? null,
    branch: row.branch ?? null,
    content: row.content ?? null,
    longRunningToolIds: row.longRunningToolIds ?? null,
    errorCode: row.errorCode ?? null,
    errorMessage: row.errorMessage ?? null,
    seq,
    createdAt,
  }) as Event;
}

/** One plain event's insert (see {@link insertPlainEvent}), after `fenceCte` (a row when the write may go ahead). */
function insertEventSql(fenceCte: SQL): SQL {
  const P = (name: string) => sql.placeholder(name);
  return sql`with fence as (${fenceCte}),
        s as (
          update ${sessions} set last_seq = last_seq + 1, updated_at = now()
          where id = ${P('sessionId')} and exists (select 1 from fence)
          returning last_seq, ${FOLLOWED}
        ), ins as (
          insert into ${events} (session_id, seq, id, invocation_id, node_path, author, branch, content, actions,
                                 long_running_tool_ids, error_code, error_message)
          select ${P('sessionId')}, s.last_seq, ${P('id')}, ${P('invocationId')}, ${P('nodePath')}, ${P('author')},
                 ${P('branch')}, ${P('content')}::jsonb, ${P('actions')}::jsonb, ${P('longRunning')}::jsonb,
                 ${P('errorCode')}, ${P('errorMessage')}
          from s
          returning seq, created_at
        )
        select (select count(*) from fence) as fenced, ins.seq, ins.created_at,
               case when (select followed from s) then pg_notify(${EVENTS_CHANNEL}, json_build_object(
                 'sessionId', ${P('sessionId')}::text, 'seq', ins.seq, 'invocationId', ${P('invocationId')}::text)::text) end
        from (select 1) as one left join ins on true`;
}

const INSERT_EVENT = new HotStatement(() => insertEventSql(sql`select 1`));
const INSERT_EVENT_FENCED = new HotStatement(() =>
  insertEventSql(
    sql`select 1 from ${nodes} where invocation_id = ${sql.placeholder('invocationId')}
          and path = ${sql.placeholder('fencePath')} and attempt = ${sql.placeholder('fenceAttempt')}::int
          and ${runningByKey()} for update`,
  ),
);

/**
 * The common case, an event that changes no state, in one statement: check the fence (locking the node row),
 * take the next seq under the session row lock, insert the event and notify followers.
 */
async function insertPlainEvent(
  db: Db,
  row: EventRow,
  fence?: { path: string; attempt: number },
): Promise<Event> {
  const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));
  const [result] = await (fence ? INSERT_EVENT_FENCED : INSERT_EVENT).run<{
    fenced: string | number;
    seq: string | number | null;
    created_at: string | Date | null;
  }>(db, {
    sessionId: row.sessionId,
    id: row.id,
    invocationId: row.invocationId,
    nodePath: row.nodePath,
    author: row.author,
    branch: row.branch,
    content: json(row.content),
    actions: json(row.actions),
    longRunning: json(row.longRunningToolIds),
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    fencePath: fence?.path ?? null,
    fenceAttempt: fence?.attempt ?? null,
  });
  if (fence && Number(result?.fenced ?? 0) === 0) throw fencedError(fence.path, fence.attempt);
  if (!result || result.seq === null || result.created_at === null) throw sessionNotFound(row.sessionId);
  return toStoredEvent(row, Number(result.seq), new Date(result.created_at));
}

async function applyAppState(tx: Db, app: string, delta: Json, appends: { key: string; value: unknown }[]) {
  await tx.insert(appStates).values({ app, state: {} }).onConflictDoNothing();
  const [row] = await tx
    .select({ state: appStates.state })
    .from(appStates)
    .where(eq(appStates.app, app))
    .for('update');
  await tx
    .update(appStates)
    .set({ state: applyToState(row?.state ?? {}, delta, appends), updatedAt: sql`now()` })
    .where(eq(appStates.app, app));
}

async function applyUserState(
  tx: Db,
  app: string,
  userId: string,
  delta: Json,
  appends: { key: string; value: unknown }[],
) {
  const where = and(eq(userStates.app, app), eq(userStates.userId, userId));
  await tx.insert(userStates).values({ app, userId, state: {} }).onConflictDoNothing();
  const [row] = await tx.select({ state: userStates.state }).from(userStates).where(where).for('update');
  await tx
    .update(userStates)
    .set({ state: applyToState(row?.state ?? {}, delta, appends), updatedAt: sql`now()` })
    .where(where);
}

async function applyTempState(
  tx: Db,
  invocationId: string,
  delta: Json,
  appends: { key: string; value: unknown }[],
) {
  const [row] = await tx
    .select({ state: invocations.tempState })
    .from(invocations)
    .where(eq(invocations.id, invocationId))
    .for('update');
  if (!row) {
    throw new AgentloomError('NOT_FOUND', `invocation "${invocationId}" does not exist`, {
      details: { invocationId },
    });
  }
  await tx
    .update(invocations)
    .set({ tempState: applyToState(row.state, delta, appends) })
    .where(eq(invocations.id, invocationId));
}

/** Options of {@link listEvents}. */
export interface ListEventsOptions {
  afterSeq?: number;
  invocationId?: string;
  nodePath?: string;
  limit?: number;
}

/** Events of a session in `seq` order. */
export async function listEvents(
  db: Db,
  sessionId: string,
  options: ListEventsOptions = {},
): Promise<Event[]> {
  const conditions = [eq(events.sessionId, sessionId)];
  if (options.afterSeq !== undefined) conditions.push(gt(events.seq, options.afterSeq));
  if (options.invocationId !== undefined) conditions.push(eq(events.invocationId, options.invocationId));
  if (options.nodePath !== undefined) conditions.push(eq(events.nodePath, options.nodePath));
  const query = db
    .select()
    .from(events)
    .where(and(...conditions))
    .orderBy(asc(events.seq));
  const rows = options.limit === undefined ? await query : await query.limit(options.limit);
  return rows.map(toEvent);
}

/** Converts a stored row to an {@link Event}, validating it (stored data crosses a boundary too). */
export function toEvent(row: typeof events.$inferSelect): Event {
  return eventSchema.parse(eventFields(row));
}

/** The event fields of a row, without validation. */
function eventFields(row: typeof events.$inferSelect): Record<string, unknown> {
  const candidate = {
    id: row.id,
    invocationId: row.invocationId ?? '',
    author: row.author,
    branch: row.branch ?? undefined,
    nodePath: row.nodePath,
    seq: row.seq,
    timestamp: row.createdAt.getTime(),
    content: row.content ?? undefined,
    errorCode: row.errorCode ?? undefined,
    errorMessage: row.errorMessage ?? undefined,
    longRunningToolIds: row.longRunningToolIds ?? undefined,
    actions: row.actions,
  };
  for (const key of Object.keys(candidate) as (keyof typeof candidate)[]) {
    if (candidate[key] === undefined) delete candidate[key];
  }
  return candidate;
}

/**
 * The text of the newest final response of an invocation (optionally under a node path), as `engine.get`
 * reports it in `output`.
 */
export async function lastFinalText(
  db: Db,
  sessionId: string,
  invocationId: string,
  pathPrefix?: string,
): Promise<string | undefined> {
  const conditions = [
    eq(events.sessionId, sessionId),
    eq(events.invocationId, invocationId),
    sql`${events.author} <> 'user'`,
  ];
  if (pathPrefix !== undefined) {
    conditions.push(
      sql`(${events.nodePath} = ${pathPrefix} or ${events.nodePath} like ${`${pathPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`})`,
    );
  }
  const rows = await db
    .select()
    .from(events)
    .where(and(...conditions))
    .orderBy(sql`${events.seq} desc`)
    .limit(50);
  for (const row of rows) {
    const event = toEvent(row);
    if (event.errorCode || !isFinalResponse(event)) continue;
    const text = textOf(event.content);
    if (text) return text;
  }
  return undefined;
}
