/**
 * Opening the database: the same drizzle schema over node-postgres (a pool plus one LISTEN connection) or over
 * PGlite (Postgres in WASM, on disk or in memory). Everything above this file sees only {@link Database}.
 */
import { PGlite } from '@electric-sql/pglite';
import { fillPlaceholders, Placeholder, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { Batcher } from '../../core/batcher.js';
import { AgentloomError } from '../../core/errors.js';
import { PgListener } from './pg-listener.js';
import { defaultTemplateDir, openPgliteClient, type TemplateLog } from './pglite-template.js';
import { createResilientPool } from './pg-pool.js';
import * as schema from './schema.js';
import { escapeLiteral } from './sql-literal.js';

/** A drizzle database or transaction over the agentloom schema, whatever the driver. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Where the data lives: a PostgreSQL URL, or PGlite on disk (a directory) or in memory. */
export type DatabaseTarget = string | { pglite: string };

/** Options of {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** Maximum pooled connections for PostgreSQL. Default 10. Ignored by PGlite (one connection). */
  poolSize?: number;
  /**
   * PGlite only: the caller applies the migrations right after opening (as `Store.open` does), so a new database may
   * start from a template already migrated. Default false: a new database is empty, as initdb leaves it.
   */
  migrating?: boolean;
  /**
   * PGlite only: the directory of the templates new databases start from instead of running initdb, or false for
   * none. Default `$XDG_CACHE_HOME/agentloom` (else `~/.cache/agentloom`); AGENTLOOM_PGLITE_TEMPLATE=off: false.
   */
  pgliteTemplateDir?: string | false;
  /** Where a PGlite template that cannot be used is reported. Default: a process warning. */
  logger?: TemplateLog;
}

/** An open database: drizzle, a way to LISTEN on a channel, and close. */
export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /** The node-postgres pool (PostgreSQL only), for a library that speaks node-postgres: the rate limits' store. */
  readonly pool?: pg.Pool;
  /**
   * Subscribes to a NOTIFY channel; resolves once listening. Returns the unsubscribe function. On PostgreSQL the
   * LISTEN connection reconnects by itself after it was lost; `onReconnect` is then called, since notifications
   * sent meanwhile are lost: re-read the state they announce. PGlite runs in this process and never calls it.
   */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Opens a database (does not migrate; see `migrate`). */
export async function openDatabase(
  target: DatabaseTarget,
  options: OpenDatabaseOptions = {},
): Promise<Database> {
  if (typeof target === 'string') return openPostgres(target, options.poolSize ?? 10);
  return openPglite(target.pglite, options);
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new AgentloomError(
      'CONFIG',
      `database URL must start with postgres:// or postgresql://, got "${url}"`,
      {
        details: { field: 'database' },
      },
    );
  }
  // Survives a server restart: no client's 'error' event goes unhandled (see createResilientPool).
  const pool = createResilientPool(url, poolSize, { genericPlans: true });
  const db = drizzlePg({ client: pool, schema }) as unknown as Db;
  // Reconnects by itself after a restart; waiters re-read through their reconnect hooks (see PgListener).
  const listener = new PgListener(url);
  return {
    kind: 'postgres',
    db,
    pool,
    listen: (channel, onPayload, onReconnect) => listener.listen(channel, onPayload, onReconnect),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

/** A warning of the process: what reports a template problem when the opener gave no logger. */
const processWarnings: TemplateLog = {
  warn: (fields, message) => {
    const err = (fields as { err?: unknown }).err;
    process.emitWarning(`agentloom: ${message}${err === undefined ? '' : `: ${String(err)}`}`);
  },
  debug: () => undefined,
};

async function openPglite(location: string, options: OpenDatabaseOptions): Promise<Database> {
  const client = await openPgliteClient(location, {
    migrating: options.migrating ?? false,
    templateDir: options.pgliteTemplateDir ?? defaultTemplateDir(),
    log: options.logger ?? processWarnings,
  });
  const db = drizzlePglite({ client, schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    async listen(channel, onPayload) {
      const unsubscribe = await client.listen(channel, onPayload);
      return unsubscribe;
    },
    async close() {
      if (!client.closed) await client.close();
    },
  };
}

/** Runs a raw SQL query and returns its rows (node-postgres and PGlite both answer with `{ rows }`). */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

/** The most statements {@link queryPrepared} names; further texts run unnamed (a guard against unbounded texts). */
const MAX_PREPARED = 64;
/** Statement names by text. The same text gets the same name on every connection; each prepares it once. */
const preparedNames = new Map<string, string>();

/**
 * {@link queryRows} for the engine's hot statements: on PostgreSQL it runs as a named prepared statement, so each
 * connection parses and plans the text once instead of at every step (a step's statements are long CTEs whose
 * planning costs more than their execution). PGlite runs it as a plain query. The text must not embed values
 * (every value a parameter), or each distinct text would be prepared anew; after {@link MAX_PREPARED} distinct
 * texts the rest run unnamed.
 */
export async function queryPrepared<T>(
  db: Db,
  query: SQL,
  options: { batched?: boolean } = {},
): Promise<T[]> {
  const dialect = (db as unknown as { dialect: PgDialect }).dialect;
  const { sql: text, params } = dialect.sqlToQuery(query);
  return runText<T>(db, text, params, options.batched ?? false);
}

async function runText<T>(db: Db, text: string, values: unknown[], batched = false): Promise<T[]> {
  const client = (db as unknown as { session?: { client?: unknown } }).session?.client;
  if (batched && client instanceof pg.Pool) {
    let batcher = poolBatchers.get(client);
    if (!batcher) {
      batcher = new Batcher((pool: pg.Pool, requests: TextRequest[]) => runBatch(pool, requests), {
        concurrency: BATCH_CONCURRENCY,
        maxBatch: MAX_BATCH,
      });
      poolBatchers.set(client, batcher);
    }
    const outcome = await batcher.submit(client, { text, values });
    if ('error' in outcome) throw outcome.error;
    return outcome.rows as T[];
  }
  if (client instanceof pg.Pool || client instanceof pg.Client) {
    let name = preparedNames.get(text);
    if (name === undefined && preparedNames.size < MAX_PREPARED) {
      name = `agentloom_${preparedNames.size + 1}`;
      preparedNames.set(text, name);
    }
    const result = await client.query<T & pg.QueryResultRow>(
      name === undefined ? { text, values } : { name, text, values },
    );
    return result.rows;
  }
  if (client instanceof PGlite) return runPglitePrepared<T>(client, text, values);
  // A PGlite transaction (already holding PGlite's locks): the same text, unnamed.
  const tx = client as { query(text: string, values: unknown[]): Promise<{ rows: T[] }> };
  return (await tx.query(text, values)).rows;
}

/** One statement of a batch: its text and its values. */
interface TextRequest {
  text: string;
  values: unknown[];
}

/** Batches written at once per pool, and the most statements in one (see {@link runBatch}). */
const BATCH_CONCURRENCY = 2;
const MAX_BATCH = 64;
const poolBatchers = new WeakMap<pg.Pool, Batcher<pg.Pool, TextRequest, StatementOutcome>>();
/** One statement's answer in a batch: its rows, or the error it alone raised. */
type StatementOutcome = { rows: unknown[] } | { error: unknown };
/** Statements prepared with SQL `PREPARE` on each connection (names apart from node-postgres's own). */
const sqlPrepared = new WeakMap<pg.PoolClient, Set<string>>();

/**
 * Group commit over one connection: statements submitted together from independent callers (steps of different
 * invocations) are sent as one simple query of `EXECUTE`s of their prepared statements — one round trip, one
 * transaction, one commit — and each caller gets its own statement's rows. The statements of the batch are kept
 * apart by what they write (each guards its own rows, and none ever raises an error in the normal course), and
 * they run in the order submitted. If the server fails the batch (one statement's error, or a deadlock with
 * another batch), nothing of it was committed, and each statement runs again alone, so an error reaches only the
 * caller whose statement raised it. A lone statement runs as usual.
 */
async function runBatch(pool: pg.Pool, requests: TextRequest[]): Promise<StatementOutcome[]> {
  const alone = (r: TextRequest): Promise<StatementOutcome> =>
    runText<unknown>(poolDb(pool), r.text, r.values).then(
      (rows) => ({ rows }),
      (error: unknown) => ({ error }),
    );
  if (requests.length === 1) return [await alone(requests[0] as TextRequest)];
  let results: pg.QueryResult[];
  const client = await pool.connect();
  try {
    let prepared = sqlPrepared.get(client);
    if (!prepared) {
      prepared = new Set();
      sqlPrepared.set(client, prepared);
    }
    const names = requests.map((r) => batchName(r.text));
    for (const [i, name] of names.entries()) {
      if (prepared.has(name)) continue;
      await client.query(`prepare ${name} as ${(requests[i] as TextRequest).text}`);
      prepared.add(name);
    }
    const text = requests
      .map((r, i) => `execute ${names[i] as string}(${r.values.map(literal).join(', ')})`)
      .join(';\n');
    results = (await client.query(text)) as unknown as pg.QueryResult[];
  } catch (err) {
    if (err instanceof pg.DatabaseError) {
      // The server rolled the whole batch back: run each statement alone.
      client.release();
      return Promise.all(requests.map(alone));
    }
    // The connection failed mid-query: whether the batch committed is unknown, as for a statement run alone that
    // loses its connection. Each caller gets that error; the connection leaves the pool.
    client.release(err as Error);
    return requests.map(() => ({ error: err }));
  }
  client.release();
  return results.map((r) => ({ rows: r.rows }));
}

/** A drizzle-shaped handle whose `session.client` is `pool` (all {@link runText} reads of a Db). */
function poolDb(pool: pg.Pool): Db {
  return { session: { client: pool } } as unknown as Db;
}

/** SQL-level names of batched statements, by text. */
const batchNames = new Map<string, string>();

function batchName(text: string): string {
  let name = batchNames.get(text);
  if (name === undefined) {
    name = `agentloom_batch_${batchNames.size + 1}`;
    batchNames.set(text, name);
  }
  return name;
}

/** A value as an SQL literal of unknown type (coerced to the parameter's type, as a bound text value is). */
function literal(value: unknown): string {
  const text = wireValue(value);
  return text === null ? 'null' : escapeLiteral(text);
}

/** Statement names prepared in each PGlite instance (it has one connection: names live as long as it does). */
const pglitePrepared = new WeakMap<PGlite, Map<string, string>>();

/**
 * A hot statement on PGlite as a named prepared statement, over PGlite's wire-protocol entry point: parsed and
 * planned once per instance (in WebAssembly, planning a long CTE costs more than running it), then one Bind /
 * Execute / Sync exchange per run instead of PGlite's six for an unnamed query. It holds the same locks as
 * PGlite's `query` (no other query or transaction interleaves).
 */
async function runPglitePrepared<T>(pglite: PGlite, text: string, values: unknown[]): Promise<T[]> {
  let names = pglitePrepared.get(pglite);
  if (!names) {
    names = new Map();
    pglitePrepared.set(pglite, names);
  }
  const known = names;
  return pglite._runExclusiveTransaction(() =>
    pglite._runExclusiveQuery(async () => {
      let name = known.get(text);
      if (name === undefined) {
        name = `agentloom_${known.size + 1}`;
        await pglite.execProtocol(serialize.parse({ name, text, types: [] }), { syncToFs: false });
        known.set(text, name);
      }
      const message = Buffer.concat([
        serialize.bind({ statement: name, values: values.map(wireValue) }),
        serialize.describe({ type: 'P' }),
        serialize.execute({}),
        serialize.sync(),
      ]);
      const { messages } = await pglite.execProtocol(message);
      return rowsOf<T>(messages);
    }),
  );
}

/** A parameter as text on the wire (how node-postgres sends it). */
function wireValue(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

const JSON_TYPES = new Set([114, 3802]);
const BOOL_TYPE = 16;

/** Rows from a statement's RowDescription and DataRow messages: json/jsonb parsed, booleans as booleans, the rest as text. */
function rowsOf<T>(messages: readonly unknown[]): T[] {
  let fields: { name: string; dataTypeID: number }[] = [];
  const rows: T[] = [];
  for (const m of messages as { name: string; fields?: unknown[] }[]) {
    if (m.name === 'rowDescription') fields = m.fields as typeof fields;
    else if (m.name === 'dataRow') {
      const row: Record<string, unknown> = {};
      (m.fields as (string | null)[]).forEach((raw, i) => {
        const field = fields[i] as { name: string; dataTypeID: number };
        if (raw === null) row[field.name] = null;
        else if (JSON_TYPES.has(field.dataTypeID)) row[field.name] = JSON.parse(raw);
        else if (field.dataTypeID === BOOL_TYPE) row[field.name] = raw === 't';
        else row[field.name] = raw;
      });
      rows.push(row as T);
    }
  }
  return rows;
}

/**
 * A statement's text and parameters with every use of one named placeholder bound to one parameter: drizzle
 * numbers each use apart (`$1`, `$7`, `$12` for three uses of `id`), so the value would be sent, escaped and
 * parsed once per use (11 times for an invocation id in a leaf's completion: ~40% of a step's statement). Values
 * that are not placeholders keep a parameter each. Left as drizzle made it when its `$n` are not exactly
 * `$1`…`$params.length` (the text then holds a `$` this rewrite cannot tell from a parameter).
 */
export function shareRepeatedPlaceholders(
  text: string,
  params: readonly unknown[],
): { text: string; params: unknown[] } {
  const uses = [...text.matchAll(/\$(\d+)\b/g)].map((m) => Number(m[1]));
  if (uses.length !== params.length || uses.some((n, i) => n !== i + 1)) return { text, params: [...params] };
  const shared: unknown[] = [];
  const byName = new Map<string, number>();
  const renumbered = params.map((param) => {
    if (param instanceof Placeholder) {
      const known = byName.get(param.name);
      if (known !== undefined) return known;
      byName.set(param.name, shared.push(param));
      return shared.length;
    }
    return shared.push(param);
  });
  return {
    text: text.replace(/\$(\d+)\b/g, (_, n: string) => `$${renumbered[Number(n) - 1]}`),
    params: shared,
  };
}

/**
 * A hot statement written once with `sql.placeholder(name)` for its values: its text and parameter order are
 * computed on first use, and each run only binds values by name (no SQL assembly per call), as a named prepared
 * statement on PostgreSQL (see {@link queryPrepared}).
 */
export class HotStatement {
  private compiled: { text: string; params: unknown[] } | undefined;

  /**
   * `batched`: the statement is written outside any transaction, by callers independent of each other, and guards
   * everything it writes: on a PostgreSQL pool, runs of it submitted together commit as one (see {@link runBatch}).
   */
  constructor(
    private readonly build: () => SQL,
    private readonly options: { batched?: boolean } = {},
  ) {}

  /** Runs the statement with `values` for its placeholders (every placeholder needs one). */
  run<T>(db: Db, values: Record<string, unknown>): Promise<T[]> {
    if (!this.compiled) {
      const query = new PgDialect().sqlToQuery(this.build());
      this.compiled = shareRepeatedPlaceholders(query.sql, query.params);
    }
    return runText<T>(
      db,
      this.compiled.text,
      fillPlaceholders(this.compiled.params, values),
      this.options.batched ?? false,
    );
  }
}
