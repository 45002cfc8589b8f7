/**
 * The whole Postgres schema of agentloom (ARCHITECTURE.md "Data model"). drizzle-kit generates the migrations in
 * migrations/ from this file; never edit a generated migration, change this file and generate a new one.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  varchar,
} from 'drizzle-orm/pg-core';

type Json = Record<string, unknown>;

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
});

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

/** One conversation of a user with an app. `state` holds the unprefixed (session-scoped) keys only. */
export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    app: text('app').notNull(),
    userId: text('user_id').notNull(),
    state: jsonb('state').$type<Json>().notNull().default({}),
    /** The seq of the newest event; bumped under the row lock, which orders concurrent appends. */
    lastSeq: bigint('last_seq', { mode: 'number' }).notNull().default(0),
    /**
     * Until when some process follows this session's events (renewed while it does). An event's NOTIFY is sent
     * only before then: NOTIFY serialises committing transactions database-wide, so an unfollowed session's steps
     * send none. Read from the row its append locks, so a follower registered before the append is notified, and
     * an append that took the lock first is committed before the registration (and read by the follower).
     */
    followedUntil: timestamp('followed_until', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  // Not on updated_at: every event bumps it (with last_seq), and an indexed column would make each bump a new
  // index entry instead of a heap-only (HOT) update; a user's sessions are few enough to sort. The table's
  // fillfactor (migration 0003) leaves room on each page for those updates.
  (t) => [index('sessions_app_user_idx').on(t.app, t.userId)],
);

/** `app:` state, shared by every session of an app (keys stored without the prefix). */
export const appStates = pgTable('app_states', {
  app: text('app').primaryKey(),
  state: jsonb('state').$type<Json>().notNull().default({}),
  updatedAt: updatedAt(),
});

/** `user:` state, shared by every session of one user in one app (keys stored without the prefix). */
export const userStates = pgTable(
  'user_states',
  {
    app: text('app').notNull(),
    userId: text('user_id').notNull(),
    state: jsonb('state').$type<Json>().notNull().default({}),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.app, t.userId] })],
);

/** Append-only history; `seq` is strictly increasing per session, in commit order. */
export const events = pgTable(
  'events',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    id: text('id').notNull(),
    invocationId: text('invocation_id'),
    nodePath: text('node_path').notNull().default(''),
    author: text('author').notNull(),
    branch: text('branch'),
    content: jsonb('content').$type<Json>(),
    actions: jsonb('actions').$type<Json>().notNull(),
    longRunningToolIds: jsonb('long_running_tool_ids').$type<string[]>(),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.sessionId, t.seq] }),
    uniqueIndex('events_id_idx').on(t.id),
    index('events_invocation_idx').on(t.invocationId, t.nodePath, t.seq),
  ],
);

/** One run of a root agent for one input; its status is the one users see. */
export const invocations = pgTable(
  'invocations',
  {
    id: text('id').primaryKey(),
    app: text('app').notNull(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    rootAgent: text('root_agent').notNull(),
    definitionHash: text('definition_hash').notNull(),
    status: text('status').notNull(),
    input: jsonb('input').$type<Json>(),
    output: text('output'),
    escalated: boolean('escalated').notNull().default(false),
    error: jsonb('error').$type<Json>(),
    tempState: jsonb('temp_state').$type<Json>().notNull().default({}),
    llmCalls: integer('llm_calls').notNull().default(0),
    maxLlmCalls: integer('max_llm_calls').notNull(),
    idempotencyKey: text('idempotency_key'),
    createdBy: text('created_by'),
    /** The caller's W3C trace context (`traceparent`) when one came with the request: the run's trace parent. */
    traceparent: text('traceparent'),
    /** The invocation this one was forked from (engine.fork); null for a run that was not forked. */
    forkedFrom: text('forked_from'),
    /** How it was forked: `{at, state?, instruction?, input?}` (see engine/runs/fork.ts). */
    fork: jsonb('fork').$type<Json>(),
    /**
     * The run's budget of model spending: the app's merged with the invocation's, then raised by answers
     * to `budget` pauses; `agents` holds raised limits of agents' subtree budgets by agent name. Null: no budget.
     */
    budget: jsonb('budget').$type<Json>(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    endedAt: timestamp('ended_at', { withTimezone: true, mode: 'date' }),
    /**
     * When the run's end was last handled after its commit (its trace, the plugins' afterRunCallback): a run whose
     * `ended_at` is later is still to be handled, by exactly one process that claims it (store/repos/run-ends.ts).
     * Defaults to the row's creation (rows that existed before the column count as handled).
     */
    runEndHandledAt: timestamp('run_end_handled_at', { withTimezone: true, mode: 'date' }).defaultNow(),
    /**
     * When the plugins' beforeRunCallback answered for this run (at its first step), stored with that answer in one
     * commit: a later step, on any worker, does not ask again. Null: not asked yet (or no plugin asks).
     */
    beforeRunAt: timestamp('before_run_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // Ended runs whose end is not handled yet: what a worker's sweep finds after a crash.
    index('invocations_run_end_pending_idx')
      .on(t.endedAt)
      .where(sql`ended_at > run_end_handled_at`),
    uniqueIndex('invocations_idempotency_idx').on(t.app, t.idempotencyKey),
    index('invocations_app_status_idx').on(t.app, t.status, t.createdAt),
    index('invocations_session_idx').on(t.sessionId),
    // An original's forks (engine.fork): the run page links to them.
    index('invocations_forked_from_idx')
      .on(t.forkedFrom)
      .where(sql`forked_from is not null`),
    // Retention (store/repos/prune.ts): ended runs, oldest first.
    index('invocations_ended_idx')
      .on(t.endedAt)
      .where(sql`status in ('completed', 'failed', 'cancelled')`),
    // The API's list (newest first, the id as tie-breaker and keyset cursor), for all apps or one. NULLS FIRST
    // is what `ORDER BY … DESC` means: an index sorted otherwise would not serve that order.
    index('invocations_created_idx').on(t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index('invocations_app_created_idx').on(t.app, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

/**
 * What the model calls of one agent spent in one invocation: the totals and the largest single call (the next
 * call's reservation). Added to in the transaction that stores the call's model event, so a crash neither loses
 * nor double-counts a call. The run's spend is the sum of its rows (one row per agent that called a model).
 */
export const agentSpends = pgTable(
  'agent_spends',
  {
    invocationId: text('invocation_id')
      .notNull()
      .references(() => invocations.id, { onDelete: 'cascade' }),
    agent: text('agent').notNull(),
    modelCalls: integer('model_calls').notNull().default(0),
    tokens: bigint('tokens', { mode: 'number' }).notNull().default(0),
    inputTokens: bigint('input_tokens', { mode: 'number' }).notNull().default(0),
    outputTokens: bigint('output_tokens', { mode: 'number' }).notNull().default(0),
    costUsd: doublePrecision('cost_usd').notNull().default(0),
    /** The largest single call so far, per measure (what the agent's next call reserves). */
    maxTokens: bigint('max_tokens', { mode: 'number' }).notNull().default(0),
    maxInputTokens: bigint('max_input_tokens', { mode: 'number' }).notNull().default(0),
    maxOutputTokens: bigint('max_output_tokens', { mode: 'number' }).notNull().default(0),
    maxCostUsd: doublePrecision('max_cost_usd').notNull().default(0),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.invocationId, t.agent] })],
);

/** The checkpoint table: one row per activation of an agent inside an invocation. */
export const nodes = pgTable(
  'nodes',
  {
    invocationId: text('invocation_id')
      .notNull()
      .references(() => invocations.id, { onDelete: 'cascade' }),
    path: text('path').notNull(),
    parentPath: text('parent_path'),
    agent: text('agent').notNull(),
    kind: text('kind').notNull(),
    branch: text('branch'),
    status: text('status').notNull(),
    checkpoint: jsonb('checkpoint').$type<Json>().notNull().default({}),
    escalated: boolean('escalated').notNull().default(false),
    output: text('output'),
    error: jsonb('error').$type<Json>(),
    /** Fencing token: bumped by every claim; later writes of a step are conditional on it. */
    attempt: integer('attempt').notNull().default(0),
    /** Bumped whenever the node is made runnable; part of its job id so a new wake-up is never deduplicated away. */
    wake: integer('wake').notNull().default(0),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true, mode: 'date' }),
    /**
     * What a running leaf that gave back its worker waits for (a model's rate limit: `{ kind, model, until }`),
     * until `until`; stale once past (the next claim does not clear it).
     */
    waiting: jsonb('waiting').$type<Json>(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.invocationId, t.path] }),
    index('nodes_runnable_idx')
      .on(t.status, t.leaseExpiresAt)
      .where(sql`status in ('pending', 'running')`),
  ],
);

/** Paused tool calls (confirmations, long-running, in-doubt) and who answered them. */
export const toolRequests = pgTable(
  'tool_requests',
  {
    invocationId: text('invocation_id')
      .notNull()
      .references(() => invocations.id, { onDelete: 'cascade' }),
    callId: text('call_id').notNull(),
    nodePath: text('node_path').notNull(),
    kind: text('kind').notNull(),
    request: jsonb('request').$type<Json>().notNull(),
    response: jsonb('response').$type<Json>(),
    status: text('status').notNull(),
    answeredBy: text('answered_by'),
    answeredAt: timestamp('answered_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.invocationId, t.callId] }),
    index('tool_requests_call_idx').on(t.callId),
    // The inbox: calls still waiting, oldest first, however many were answered.
    index('tool_requests_pending_idx')
      .on(t.createdAt)
      .where(sql`status = 'pending'`),
  ],
);

/** Versioned binary artifacts of a session. */
export const artifacts = pgTable(
  'artifacts',
  {
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    mime: text('mime').notNull(),
    data: bytea('data').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.name, t.version] })],
);

/**
 * A user's credential for a tool (the auth gate): one per (app, user, credential key), the secret sealed with
 * AES-256-GCM under AGENTLOOM_SECRET_KEY (src/auth/secret-box.ts). Nothing else in the database holds a secret.
 */
export const credentials = pgTable(
  'credentials',
  {
    app: text('app').notNull(),
    userId: text('user_id').notNull(),
    credentialKey: text('credential_key').notNull(),
    authType: text('auth_type').notNull(),
    secret: bytea('secret').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.app, t.userId, t.credentialKey] })],
);

/**
 * The shared rate-limit counters when the engine has PostgreSQL and no Redis (src/queue/model-rate-limiter.ts:
 * rate-limiter-flexible's RateLimiterPostgres reads and upserts it; `expire` is ms since the epoch).
 */
export const rateLimits = pgTable('rate_limits', {
  key: varchar('key', { length: 255 }).primaryKey(),
  points: integer('points').notNull().default(0),
  expire: bigint('expire', { mode: 'number' }),
});
