/**
 * W6: milliseconds from an event's commit to a follower (`engine.events(id, { follow: true })` in the bench
 * process) receiving it. The `stamped` app's leaves each wait 25 ms (so the follower is idle, waiting on LISTEN,
 * when the event arrives) and then emit an event whose text is the wall clock right before it is stored.
 *
 * Two clocks are reported per event:
 * - **commit → received**: the server runs with track_commit_timestamp=on for this suite, so
 *   `pg_xact_commit_timestamp(xmin)` of the event row is the commit time itself, on PostgreSQL's clock. Both
 *   clocks are the host's realtime clock; the offset between them (PostgreSQL's `clock_timestamp()` against
 *   this process's, taking the sample with the shortest round trip, ±half of it) is measured and applied.
 * - **emitted → received**: from the leaf's own stamp (taken before the insert and commit), an upper bound that
 *   needs no server clock; in the distributed mode the stamp comes from the worker process's clock (same host).
 */
import pg from 'pg';
import type { Engine } from '../../../src/index.js';
import type { BenchContext } from '../context.js';
import { percentile, summarize, wallMs, type SuiteResult } from '../measure.js';
import { MODE_LABELS, openMode, type ModeName } from './modes.js';

interface Received {
  eventId: string;
  stampMs: number;
  receivedMs: number;
}

async function clockOffset(db: pg.Client): Promise<{ offsetMs: number; uncertaintyMs: number }> {
  let best = { offsetMs: 0, uncertaintyMs: Number.POSITIVE_INFINITY };
  for (let i = 0; i < 20; i++) {
    const before = wallMs();
    const { rows } = await db.query<{ ms: string }>(
      'select extract(epoch from clock_timestamp()) * 1000 as ms',
    );
    const after = wallMs();
    const half = (after - before) / 2;
    if (half < best.uncertaintyMs)
      best = { offsetMs: Number(rows[0]?.ms) - (before + half), uncertaintyMs: half };
  }
  return best;
}

async function follow(engine: Engine): Promise<{ invocationId: string; received: Received[] }> {
  const { invocationId } = await engine.enqueue({ app: 'stamped', userId: 'bench', input: 'go' });
  const received: Received[] = [];
  for await (const event of engine.events(invocationId, { follow: true })) {
    const receivedMs = wallMs();
    const text = event.content?.parts[0]?.text ?? '';
    const match = /^stamp ([\d.]+)$/.exec(text);
    if (match) received.push({ eventId: event.id, stampMs: Number(match[1]), receivedMs });
  }
  return { invocationId, received };
}

function stats(values: number[]): Record<string, number> {
  const s = summarize(values);
  return {
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    min: s.min,
    max: s.max,
    count: values.length,
  };
}

async function followMode(mode: ModeName, ctx: BenchContext): Promise<Record<string, unknown>> {
  const target = await openMode(mode, ctx, { database: `al_w6_${mode.replace(/-/g, '_')}` });
  const db = new pg.Client({ connectionString: target.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ track_commit_timestamp: string }>('show track_commit_timestamp');
    if (rows[0]?.track_commit_timestamp !== 'on') throw new Error('W6 needs track_commit_timestamp=on');
    await follow(target.engine); // warm-up
    const offset = await clockOffset(db);
    const commitToReceived: number[] = [];
    const emittedToReceived: number[] = [];
    for (let i = 0; i < ctx.scale.w6Invocations; i++) {
      const { invocationId, received } = await follow(target.engine);
      const { rows: commits } = await db.query<{ id: string; commit_ms: string }>(
        `select id, extract(epoch from pg_xact_commit_timestamp(xmin)) * 1000 as commit_ms
           from events where invocation_id = $1`,
        [invocationId],
      );
      const commitMs = new Map(commits.map((r) => [r.id, Number(r.commit_ms) - offset.offsetMs]));
      for (const r of received) {
        emittedToReceived.push(r.receivedMs - r.stampMs);
        const committed = commitMs.get(r.eventId);
        if (committed !== undefined && Number.isFinite(committed))
          commitToReceived.push(r.receivedMs - committed);
      }
    }
    return {
      label: MODE_LABELS[mode],
      clockOffsetMs: offset.offsetMs,
      clockUncertaintyMs: offset.uncertaintyMs,
      commitToReceivedMs: stats(commitToReceived),
      emittedToReceivedMs: stats(emittedToReceived),
    };
  } finally {
    await db.end();
    await target.close();
  }
}

/** Runs W6 in the in-process mode and with a worker process (the follower then in another process). */
export async function runFollow(ctx: BenchContext): Promise<SuiteResult> {
  const result: SuiteResult = {
    suite: 'w6',
    label: 'W6: event commit → follower',
    kind: 'extra',
    figures: {},
    extra: {},
    errors: [],
  };
  for (const mode of ['pg-local', 'pg-redis-1'] as const) {
    (result.extra as Record<string, unknown>)[mode] = await followMode(mode, ctx);
  }
  return result;
}
