/**
 * Retention: deleting ended runs (`agentloom prune`, `createEngine({ retention })`). A run is deleted with its
 * events, nodes and tool requests (the audit trail of its answers); its session goes with the session's last run.
 * A run that is queued, running, waiting or paused is never touched. Work is done in small batches, each one
 * short transaction, so the hot tables are never locked for long.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/database.js';
import { inTransaction } from '../db/tx.js';

/** The statuses a run may be pruned in. */
export const PRUNABLE_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type PrunableStatus = (typeof PRUNABLE_STATUSES)[number];

/** Which runs go. */
export interface PruneCriteria {
  /** Runs that ended more than this many ms ago. */
  olderThanMs: number;
  /** Only this app's runs. */
  app?: string;
  /** Only runs in these statuses (default: all of {@link PRUNABLE_STATUSES}). */
  statuses?: readonly PrunableStatus[];
}

/** Rows deleted (or, in a dry run, that would be), per table. */
export interface PruneCounts {
  invocations: number;
  sessions: number;
  events: number;
  nodes: number;
  toolRequests: number;
  artifacts: number;
}

export const NO_PRUNE_COUNTS: Readonly<PruneCounts> = Object.freeze({
  invocations: 0,
  sessions: 0,
  events: 0,
  nodes: 0,
  toolRequests: 0,
  artifacts: 0,
});

/** Adds `b` to `a` (in place) and returns `a`. */
export function addPruneCounts(a: PruneCounts, b: PruneCounts): PruneCounts {
  for (const key of Object.keys(a) as (keyof PruneCounts)[]) a[key] += b[key];
  return a;
}

/**
 * Arbitrary but fixed advisory-lock key: one pruning batch at a time across every process of a database (the
 * workers' retention and `agentloom prune`), so two pruners never contend for the same rows' locks.
 */
const PRUNE_LOCK_KEY = 7_362_541_003;

/** A text[] parameter (one parameter, not a list of them). */
function textArray(values: readonly string[]) {
  return sql`${sql.param(values)}::text[]`;
}

function statusesOf(criteria: PruneCriteria): string[] {
  const statuses = criteria.statuses ?? PRUNABLE_STATUSES;
  return statuses.length === 0 ? [...PRUNABLE_STATUSES] : [...statuses];
}

/**
 * A run that ended (every terminal status sets `ended_at`) before the cutoff. The literal status list lets the
 * planner use the partial index `invocations_ended_idx`.
 */
function eligible(criteria: PruneCriteria, alias = 'i') {
  const older = `${Math.max(0, Math.round(criteria.olderThanMs))} milliseconds`;
  const table = sql.raw(alias);
  return sql`${table}.status in ('completed', 'failed', 'cancelled')
    and ${table}.status = any(${textArray(statusesOf(criteria))})
    and ${table}.ended_at < now() - ${older}::interval
    ${criteria.app === undefined ? sql`` : sql`and ${table}.app = ${criteria.app}`}`;
}

/**
 * What {@link pruneBatch} would delete if run to the end now (every batch): the runs that qualify, the sessions
 * left with no run, and the rows of both.
 */
export async function countPrunable(db: Db, criteria: PruneCriteria): Promise<PruneCounts> {
  const [row] = await queryRows<Record<string, string | number>>(
    db,
    sql`with doomed as (select i.id, i.session_id from invocations i where ${eligible(criteria)}),
        gone_sessions as (
          select distinct d.session_id as id from doomed d
          where not exists (
            select 1 from invocations o where o.session_id = d.session_id
              and o.id not in (select id from doomed))
        )
        select
          (select count(*) from doomed) as invocations,
          (select count(*) from gone_sessions) as sessions,
          (select count(*) from events e
            where e.invocation_id in (select id from doomed)
               or e.session_id in (select id from gone_sessions)) as events,
          (select count(*) from nodes n where n.invocation_id in (select id from doomed)) as nodes,
          (select count(*) from tool_requests t where t.invocation_id in (select id from doomed)) as tool_requests,
          (select count(*) from artifacts a where a.session_id in (select id from gone_sessions)) as artifacts`,
  );
  return {
    invocations: Number(row?.invocations ?? 0),
    sessions: Number(row?.sessions ?? 0),
    events: Number(row?.events ?? 0),
    nodes: Number(row?.nodes ?? 0),
    toolRequests: Number(row?.tool_requests ?? 0),
    artifacts: Number(row?.artifacts ?? 0),
  };
}

/** Options of {@link pruneBatch}. */
export interface PruneBatchOptions {
  /** At most this many runs. */
  limit: number;
  /**
   * `wait` (the CLI): wait for another pruner's batch to end. `skip` (the workers' retention): return `locked:
   * false` at once when another process is pruning.
   */
  lock: 'wait' | 'skip';
}

/**
 * Deletes one batch of qualifying runs, in one transaction: their events, nodes and tool requests, the runs, and
 * the sessions they leave without a run (with those sessions' remaining events and artifacts). `locked` is false
 * when another process held the prune lock (`lock: 'skip'`); `counts.invocations < limit` means nothing is left.
 *
 * Lock order, so that a pruner never deadlocks with a step or an enqueue: the sessions first (`FOR UPDATE`: an
 * enqueue into one of them, which must read the session's key, waits for this commit and then finds it gone, or
 * commits first and keeps it), then the runs with `SKIP LOCKED` re-checked under the lock (a run being retried or
 * answered right now is left for a later batch).
 */
export async function pruneBatch(
  db: Db,
  criteria: PruneCriteria,
  options: PruneBatchOptions,
): Promise<{ locked: boolean; counts: PruneCounts }> {
  return inTransaction(db, async (tx) => {
    if (options.lock === 'skip') {
      const [lock] = await queryRows<{ locked: boolean }>(
        tx,
        sql`select pg_try_advisory_xact_lock(${PRUNE_LOCK_KEY}) as locked`,
      );
      if (!lock?.locked) return { locked: false, counts: { ...NO_PRUNE_COUNTS } };
    } else {
      await tx.execute(sql`select pg_advisory_xact_lock(${PRUNE_LOCK_KEY})`);
    }
    const candidates = await queryRows<{ id: string; session_id: string }>(
      tx,
      sql`select i.id, i.session_id from invocations i where ${eligible(criteria)}
          order by i.ended_at limit ${options.limit}`,
    );
    if (candidates.length === 0) return { locked: true, counts: { ...NO_PRUNE_COUNTS } };
    const sessionIds = [...new Set(candidates.map((c) => c.session_id))].sort();
    await tx.execute(
      sql`select id from sessions where id = any(${textArray(sessionIds)}) order by id for update`,
    );
    const runs = await queryRows<{ id: string; session_id: string }>(
      tx,
      sql`select i.id, i.session_id from invocations i
          where i.id = any(${textArray(candidates.map((c) => c.id))}) and ${eligible(criteria)}
          for update skip locked`,
    );
    if (runs.length === 0) return { locked: true, counts: { ...NO_PRUNE_COUNTS } };
    const ids = runs.map((r) => r.id);
    const goneSessions = (
      await queryRows<{ id: string }>(
        tx,
        sql`select s.id from sessions s
            where s.id = any(${textArray([...new Set(runs.map((r) => r.session_id))])})
              and not exists (
                select 1 from invocations o where o.session_id = s.id and o.id <> all(${textArray(ids)}))`,
      )
    ).map((r) => r.id);
    const count = async (statement: ReturnType<typeof sql>): Promise<number> =>
      (
        await queryRows<{ n: string | number }>(
          tx,
          sql`with gone as (${statement} returning 1) select count(*) as n from gone`,
        )
      ).map((r) => Number(r.n))[0] ?? 0;
    const counts: PruneCounts = {
      events: await count(
        sql`delete from events where invocation_id = any(${textArray(ids)}) or session_id = any(${textArray(goneSessions)})`,
      ),
      toolRequests: await count(sql`delete from tool_requests where invocation_id = any(${textArray(ids)})`),
      nodes: await count(sql`delete from nodes where invocation_id = any(${textArray(ids)})`),
      artifacts: await count(sql`delete from artifacts where session_id = any(${textArray(goneSessions)})`),
      invocations: await count(sql`delete from invocations where id = any(${textArray(ids)})`),
      sessions: await count(sql`delete from sessions where id = any(${textArray(goneSessions)})`),
    };
    return { locked: true, counts };
  });
}
