/** A node-postgres pool that survives a server restart instead of crashing its process. */
import pg from 'pg';

/**
 * Creates a pool whose clients never emit an unhandled 'error': an idle client that loses its connection is
 * dropped by the pool (its 'error' goes to the pool's listener), and a checked-out client — one inside a
 * transaction when the server restarts, which receives 57P01 — reports the error through the query that is
 * running, not through an event that would kill the process. The next query opens a fresh connection.
 * `searchPath` (a comma-separated list of schema names) is set on every connection. With `genericPlans`, every
 * connection plans a prepared statement once, when first executed, instead of re-planning it for each of its first
 * five executions (PostgreSQL's default, which also may keep re-planning it for good): the engine's hot statements
 * are a few fixed, primary-key-guarded CTEs that take a millisecond or two to plan, and a statement that a
 * connection runs rarely (a parallel's join) would pay that every time. Statements that depend on a partial index
 * spell its predicate with literals, which a generic plan still matches. With `asyncCommit`, its transactions
 * commit without waiting for their WAL to reach disk (`synchronous_commit = off`): for writes that may be lost in
 * a server crash without harm — the PostgreSQL-only mode's queue, whose jobs are wake-ups the reconciler re-derives
 * from the nodes (a crash loses at most the last few hundred ms of them; the database stays consistent).
 */
export function createResilientPool(
  url: string,
  max: number,
  options: { searchPath?: string; genericPlans?: boolean; asyncCommit?: boolean } = {},
): pg.Pool {
  const settings = [
    // Pinned per connection (a pool handed to BullMQ must resolve its functions in BullMQ's schema).
    ...(options.searchPath ? [`-c search_path=${options.searchPath}`] : []),
    ...(options.genericPlans ? ['-c plan_cache_mode=force_generic_plan'] : []),
    ...(options.asyncCommit ? ['-c synchronous_commit=off'] : []),
  ];
  const pool = new pg.Pool({
    connectionString: url,
    max,
    keepAlive: true,
    ...(settings.length > 0 ? { options: settings.join(' ') } : {}),
  });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}
