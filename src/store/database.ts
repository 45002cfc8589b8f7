/**
 * Opening the database: the same drizzle schema over node-postgres (a pool plus one LISTEN connection) or over
 * PGlite (Postgres in WASM, on disk or in memory). Everything above this file sees only {@link Database}.
 */
import { PGlite } from '@electric-sql/pglite';
import { fillPlaceholders, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { mkdirSync } from 'node:fs';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { AgentloomError } from '../core/errors.js';
import { PgListener } from './pg-listener.js';
import { createResilientPool } from './pg-pool.js';
import * as schema from './schema.js';

/** A drizzle database or transaction over the agentloom schema, whatever the driver. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Where the data lives: a PostgreSQL URL, or PGlite on disk (a directory) or in memory. */
export type DatabaseTarget = string | { pglite: string };

/** Options of {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** Maximum pooled connections for PostgreSQL. Default 10. Ignored by PGlite (one connection). */
  poolSize?: number;
}

/** An open database: drizzle, a way to LISTEN on a channel, and close. */
export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
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
  return openPglite(target.pglite);
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
  const pool = createResilientPool(url, poolSize);
  const db = drizzlePg({ client: pool, schema }) as unknown as Db;
  // Reconnects by itself after a restart; waiters re-read through their reconnect hooks (see PgListener).
  const listener = new PgListener(url);
  return {
    kind: 'postgres',
    db,
    listen: (channel, onPayload, onReconnect) => listener.listen(channel, onPayload, onReconnect),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

async function openPglite(location: string): Promise<Database> {
  let client: PGlite;
  if (location === 'memory' || location === ':memory:') {
    client = new PGlite();
  } else {
    mkdirSync(location, { recursive: true });
    client = new PGlite(location);
  }
  await client.waitReady;
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
export async function queryPrepared<T>(db: Db, query: SQL): Promise<T[]> {
  const dialect = (db as unknown as { dialect: PgDialect }).dialect;
  const { sql: text, params } = dialect.sqlToQuery(query);
  return runText<T>(db, text, params);
}

async function runText<T>(db: Db, text: string, values: unknown[]): Promise<T[]> {
  const client = (db as unknown as { session?: { client?: unknown } }).session?.client;
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
 * A hot statement written once with `sql.placeholder(name)` for its values: its text and parameter order are
 * computed on first use, and each run only binds values by name (no SQL assembly per call), as a named prepared
 * statement on PostgreSQL (see {@link queryPrepared}).
 */
export class HotStatement {
  private compiled: { text: string; params: unknown[] } | undefined;

  constructor(private readonly build: () => SQL) {}

  /** Runs the statement with `values` for its placeholders (every placeholder needs one). */
  run<T>(db: Db, values: Record<string, unknown>): Promise<T[]> {
    if (!this.compiled) {
      const query = new PgDialect().sqlToQuery(this.build());
      this.compiled = { text: query.sql, params: query.params };
    }
    return runText<T>(db, this.compiled.text, fillPlaceholders(this.compiled.params, values));
  }
}
