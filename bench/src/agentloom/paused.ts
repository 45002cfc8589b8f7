/**
 * W5: many paused invocations. One `agentloom worker` (BullMQ on Redis) runs the `approval` app: its model asks
 * for a tool that needs a human's confirmation, so every invocation pauses. After a warm-up batch, the worker's
 * RSS (/proc/<pid>/status VmRSS) and the database size (pg_database_size) are read, `w5Paused` more invocations
 * are enqueued (32 in flight) and run until paused, and both are read again. Also: the per-table growth.
 */
import pg from 'pg';
import type { BenchContext } from '../context.js';
import { sleep, waitFor, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { openMode, type ModeTarget } from './modes.js';
import type { WorkerProcess } from './workers.js';

const IN_FLIGHT = 32;
/**
 * The worker is left idle this long before each RSS reading: V8 shrinks its heap a few seconds into idleness, so
 * both readings are taken in the same (settled) state rather than wherever the last GC left it.
 */
const SETTLE_MS = 10_000;

/** The lowest of five RSS readings over two seconds, after the worker has been idle for {@link SETTLE_MS}. */
async function settledRss(worker: WorkerProcess): Promise<number> {
  await sleep(SETTLE_MS);
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(worker.rssBytes());
    await sleep(500);
  }
  return Math.min(...readings);
}

async function enqueueMany(target: ModeTarget, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        next++;
        await target.engine.enqueue({ app: 'approval', userId: 'bench', input: 'publish it' });
      }
    }),
  );
}

async function statusCounts(db: pg.Client): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: string }>(
    'select status, count(*) as n from invocations group by status',
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

async function waitPaused(db: pg.Client, total: number): Promise<void> {
  await waitFor(
    async () => {
      const counts = await statusCounts(db);
      if ((counts.failed ?? 0) > 0) throw new Error(`invocations failed: ${JSON.stringify(counts)}`);
      return (counts.paused ?? 0) >= total;
    },
    { timeoutMs: 1_800_000, intervalMs: 250, what: `${total} paused invocations` },
  );
}

async function tableBytes(db: pg.Client): Promise<Record<string, number>> {
  const { rows } = await db.query<{ name: string; bytes: string }>(
    `select c.relname as name, pg_total_relation_size(c.oid) as bytes from pg_class c
      where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

/** Runs W5. */
export async function runPaused(ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const result: SuiteResult = {
    suite: 'w5',
    label: `W5: ${scale.w5Paused} paused invocations (1 worker process, BullMQ/Redis)`,
    kind: 'extra',
    figures: {},
    errors: [],
  };
  const target = await openMode('pg-redis-1', ctx, { database: 'al_w5' });
  const counters = await PgCounters.open(ctx.postgresUrl, 'al_w5');
  const db = new pg.Client({ connectionString: target.databaseUrl });
  await db.connect();
  const worker = target.workers[0];
  if (!worker) throw new Error('W5 needs a worker process');
  try {
    await enqueueMany(target, scale.w5Warmup);
    await waitPaused(db, scale.w5Warmup);
    const rssBefore = await settledRss(worker);
    const dbBefore = await counters.databaseBytes();
    const tablesBefore = await tableBytes(db);
    const started = performance.now();
    await enqueueMany(target, scale.w5Paused);
    await waitPaused(db, scale.w5Warmup + scale.w5Paused);
    const seconds = (performance.now() - started) / 1000;
    const rssAtEnd = worker.rssBytes();
    const rssAfter = await settledRss(worker);
    const dbAfter = await counters.databaseBytes();
    const tablesAfter = await tableBytes(db);
    const perTable = Object.fromEntries(
      Object.entries(tablesAfter)
        .map(([name, bytes]): [string, number] => [
          name,
          (bytes - (tablesBefore[name] ?? 0)) / scale.w5Paused,
        ])
        .filter(([, bytes]) => bytes !== 0)
        .sort((a, b) => b[1] - a[1]),
    );
    result.extra = {
      paused: scale.w5Paused,
      warmup: scale.w5Warmup,
      seconds,
      pausedPerSecond: scale.w5Paused / seconds,
      rssBeforeBytes: rssBefore,
      rssAtEndBytes: rssAtEnd,
      rssAfterBytes: rssAfter,
      rssGrowthBytes: rssAfter - rssBefore,
      rssGrowthPerPausedRunBytes: (rssAfter - rssBefore) / scale.w5Paused,
      databaseBytesBefore: dbBefore,
      databaseBytesAfter: dbAfter,
      databaseBytesPerPausedRun: (dbAfter - dbBefore) / scale.w5Paused,
      tableBytesPerPausedRun: perTable,
      statuses: await statusCounts(db),
    };
  } finally {
    await db.end();
    await counters.close();
    await target.close();
  }
  return result;
}
