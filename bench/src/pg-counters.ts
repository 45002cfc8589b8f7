/**
 * Database counters of a measured window, read on the harness's own connection to the `postgres` database, so
 * none of the harness's queries are counted (every figure is filtered to the measured system's database, or is
 * cluster-wide WAL written while only that system runs):
 *
 * - statements: pg_stat_statements (`track = top`), reset for that database at the start of the window; exact
 *   and immediate (updated at the end of each statement).
 * - write transactions: Transaction/COMMIT records in the WAL between the window's start and end LSN
 *   (pg_walinspect); read-only transactions write no commit record. WAL bytes: the LSN difference.
 * - commits (pg_stat_database.xact_commit, read-only ones included) and WAL syncs (pg_stat_wal.wal_sync): these
 *   are flushed by each backend at most once a second, and by an idle backend only after 10 s, so they are read
 *   after {@link STATS_FLUSH_MS} of quiet, and the quiet's own background activity (reconciler passes, queue
 *   polling) is subtracted using an idle window of the same length.
 */
import pg from 'pg';
import type { CountsPerStep } from './measure.js';
import { sleep } from './measure.js';

/** Longer than PGSTAT_IDLE_INTERVAL (10 s): by then every idle backend has flushed its statistics. */
export const STATS_FLUSH_MS = 11_000;

/** A window opened by {@link PgCounters.begin}. */
export interface CounterWindow {
  startLsn: string;
}

/** Flushed statistics at one moment (see {@link PgCounters.lagged}). */
export interface LaggedSnapshot {
  atMs: number;
  commits: number;
  walSyncs: number;
}

// PostgreSQL regular expressions have no \b (it is a backspace there): end the keyword explicitly.
const TX_CONTROL = String.raw`^\s*(begin|commit|rollback|savepoint|release|start\s+transaction|end)(\s|;|$)`;

/** Counters of one database on the benchmark server. */
export class PgCounters {
  private constructor(
    private readonly client: pg.Client,
    private readonly database: string,
    private readonly dbid: number,
  ) {}

  /** Opens the harness connection (to `adminUrl`, the `postgres` database) for counting `database`. */
  static async open(adminUrl: string, database: string): Promise<PgCounters> {
    const client = new pg.Client({ connectionString: adminUrl, application_name: 'bench-harness' });
    await client.connect();
    const { rows } = await client.query<{ oid: number }>('select oid from pg_database where datname = $1', [
      database,
    ]);
    if (!rows[0]) throw new Error(`database ${database} does not exist`);
    return new PgCounters(client, database, Number(rows[0].oid));
  }

  /** Starts a window: resets the database's statement statistics and notes the WAL position. */
  async begin(): Promise<CounterWindow> {
    await this.client.query('select pg_stat_statements_reset(0, $1, 0)', [this.dbid]);
    const { rows } = await this.client.query<{ lsn: string }>(
      'select pg_current_wal_insert_lsn()::text as lsn',
    );
    return { startLsn: (rows[0] as { lsn: string }).lsn };
  }

  /** Ends a window: the immediate counters, per step. */
  async end(window: CounterWindow, steps: number, top = 14): Promise<CountsPerStep> {
    // Commits are flushed before they return (synchronous_commit on), so the flush LSN covers them.
    const { rows: lsnRows } = await this.client.query<{ lsn: string; bytes: string }>(
      'select pg_current_wal_flush_lsn()::text as lsn, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) as bytes',
      [window.startLsn],
    );
    const end = lsnRows[0] as { lsn: string; bytes: string };
    const { rows: walRows } = await this.client.query<{ count: string }>(
      `select coalesce(sum(count), 0) as count from pg_get_wal_stats($1, $2, true)
        where "resource_manager/record_type" = 'Transaction/COMMIT'`,
      [window.startLsn, end.lsn],
    );
    const { rows: stmts } = await this.client.query<{
      query: string;
      calls: string;
      total_ms: number;
      tx_control: boolean;
    }>(
      `select query, calls, total_exec_time as total_ms, query ~* $2 as tx_control
         from pg_stat_statements where dbid = $1 order by calls desc, total_exec_time desc`,
      [this.dbid, TX_CONTROL],
    );
    const statements = stmts.reduce((sum, s) => sum + Number(s.calls), 0);
    const control = stmts.filter((s) => s.tx_control).reduce((sum, s) => sum + Number(s.calls), 0);
    const serverMs = stmts.reduce((sum, s) => sum + s.total_ms, 0);
    return {
      steps,
      statements: statements / steps,
      statementsWithoutTxControl: (statements - control) / steps,
      writeTransactions: Number(walRows[0]?.count ?? 0) / steps,
      walBytes: Number(end.bytes) / steps,
      serverMs: serverMs / steps,
      topStatements: stmts.slice(0, top).map((s) => ({
        query: s.query.replace(/\s+/g, ' ').slice(0, 240),
        callsPerStep: Number(s.calls) / steps,
        meanMs: s.total_ms / Number(s.calls),
        totalMsPerStep: s.total_ms / steps,
      })),
    };
  }

  /** Flushed statistics now: commits of the database, and WAL syncs of the whole server. */
  async lagged(): Promise<LaggedSnapshot> {
    const { rows } = await this.client.query<{ commits: string; syncs: string }>(
      `select (select xact_commit from pg_stat_database where datname = $1) as commits,
              (select wal_sync from pg_stat_wal) as syncs`,
      [this.database],
    );
    const row = rows[0] as { commits: string; syncs: string };
    return { atMs: Date.now(), commits: Number(row.commits), walSyncs: Number(row.syncs) };
  }

  /** Waits until every backend has flushed its statistics, then takes a {@link lagged} snapshot. */
  async laggedAfterFlush(): Promise<LaggedSnapshot> {
    await sleep(STATS_FLUSH_MS);
    return this.lagged();
  }

  /** The database's size in bytes. */
  async databaseBytes(): Promise<number> {
    const { rows } = await this.client.query<{ bytes: string }>('select pg_database_size($1) as bytes', [
      this.database,
    ]);
    return Number(rows[0]?.bytes ?? 0);
  }

  /** A query on the harness connection (to the `postgres` database). */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.client.query<R>(text, values);
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/**
 * Commits and WAL syncs per step between two flushed snapshots, less the background activity of an idle window
 * (`idle`, a pair of snapshots with nothing running) scaled to the window's length.
 */
export function laggedPerStep(
  from: LaggedSnapshot,
  to: LaggedSnapshot,
  idle: { from: LaggedSnapshot; to: LaggedSnapshot },
  steps: number,
): { commits: number; walSyncs: number } {
  const idleMs = Math.max(1, idle.to.atMs - idle.from.atMs);
  const scale = (to.atMs - from.atMs) / idleMs;
  const commits = to.commits - from.commits - (idle.to.commits - idle.from.commits) * scale;
  const walSyncs = to.walSyncs - from.walSyncs - (idle.to.walSyncs - idle.from.walSyncs) * scale;
  return { commits: Math.max(0, commits) / steps, walSyncs: Math.max(0, walSyncs) / steps };
}
