/** A node-postgres pool that survives a server restart instead of crashing its process. */
import pg from 'pg';

/**
 * Creates a pool whose clients never emit an unhandled 'error': an idle client that loses its connection is
 * dropped by the pool (its 'error' goes to the pool's listener), and a checked-out client — one inside a
 * transaction when the server restarts, which receives 57P01 — reports the error through the query that is
 * running, not through an event that would kill the process. The next query opens a fresh connection.
 * `searchPath` (a comma-separated list of schema names) is set on every connection.
 */
export function createResilientPool(
  url: string,
  max: number,
  options: { searchPath?: string } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    keepAlive: true,
    // Pinned per connection (a pool handed to BullMQ must resolve its functions in BullMQ's schema).
    ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
  });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}
