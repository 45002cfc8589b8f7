/**
 * "Where the time goes" in words, computed from the run: for each missed target, what the counters and the
 * profile say the time is spent on, and which change would remove it. Every number comes from the report; only
 * the levers (the changes named) are written by hand.
 */
import type { ProfileSummary } from '../agentloom/profile.js';
import type { CountsPerStep } from '../measure.js';
import { best, counts, figure, labelOf, marginal, suite, type BenchReport } from './shape.js';
import { PG_MODES } from './targets.js';

const n = (value: number | undefined, digits = 2): string =>
  value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);

function share(p: ProfileSummary | undefined, test: (name: string) => boolean): number {
  if (!p) return 0;
  return p.byArea.filter((a) => test(a.name)).reduce((sum, a) => sum + a.percent, 0);
}

function readOnlyPairs(c: CountsPerStep): number {
  // BEGIN/COMMIT pairs whose COMMIT takes no time flushed no WAL: read-only transactions.
  const commit = c.topStatements.find((s) => s.query.trim().toLowerCase() === 'commit');
  return commit && commit.meanMs < 0.05 ? commit.callsPerStep : 0;
}

/** Bullet points on where agentloom's time goes and what would remove it. */
export function analysis(report: BenchReport): string {
  const out: string[] = [];
  const w1 = best(report, PG_MODES, 'w1');
  const floor = figure(report, 'floor-bullmq-upsert', 'w1');
  const commit = figure(report, 'floor-commit', 'w1');
  const c = w1 ? counts(report, w1.name, 'w1') : undefined;
  const m = w1 ? marginal(report, w1.name) : undefined;
  const local = suite(report, 'agentloom-pg-local')?.extra as
    { profileW1?: ProfileSummary; profileW2?: ProfileSummary } | undefined;
  if (w1 && c && floor && commit) {
    const syncMs = (c.walSyncs ?? c.writeTransactions) * commit.median;
    out.push(
      `**W1** (${labelOf(report, w1.name)}: ${n(w1.figure.median)} ms per step, the design floor ${n(floor.median)}): ` +
        `a leaf step costs ${n(c.statements, 1)} statements all-in (${n(m?.statements, 1)} marginal) against the floor's 1, ` +
        `${n(c.writeTransactions)} write transactions and ${n(c.walSyncs)} WAL syncs against 1. At this run's ` +
        `${n(commit.median)} ms per durable commit, the WAL syncs alone account for ≈ ${n(syncMs)} ms per step; the ` +
        `statements' own execution on the server is ${n(c.serverMs)} ms; the rest is round trips and client CPU: ` +
        `${n(c.statements, 0)} round trips per step, ≈ ${n((w1.figure.median - syncMs) / c.statements)} ms each once ` +
        `the WAL syncs are taken out (in the CPU profile of W1 the main thread is idle ` +
        `${n(
          share(local?.profileW1, (a) => a === '(idle)'),
          0,
        )}% of the time, i.e. waiting for PostgreSQL). ` +
        `A step is a chain of dependent round trips, so on a busy machine each one also waits to be scheduled: ` +
        `the number of statements, more than their cost, sets W1.`,
    );
    const pairs = readOnlyPairs(c);
    const remove = [
      `less client CPU per step (the W2 profile below: the pg driver, JSON, event validation, socket writes)`,
      `fewer statements per invocation around the steps (${n(c.statements, 1)} all-in against ${n(m?.statements, 1)} ` +
        `marginal: the enqueue and the root's first advance are shared by only 20 steps; run alone, ` +
        `as in W1, they are not batched with anything)`,
      ...(pairs > 0
        ? [`no read-only BEGIN/COMMIT (${n(pairs, 2)} pairs per step whose COMMIT flushes nothing)`]
        : []),
    ];
    out.push(
      `Already done: each hot statement is a named prepared statement, compiled once (no query ` +
        `assembly per step); a job's claim is one statement; the next leaf is claimed by the advance that made it ` +
        `runnable and runs on the same worker; a custom leaf's last event, its completion and the parent's advance ` +
        `are one statement and one commit (docs/semantics-additions.md H); the root's last step ends the invocation in ` +
        `that statement too; a running node is found by its primary key, never by scanning the running nodes of every ` +
        `run in flight; an event's NOTIFY is sent only while someone follows its session (NOTIFY serialises commits ` +
        `database-wide); the engine's connections plan each prepared statement once (\`plan_cache_mode = ` +
        `force_generic_plan\`: by default PostgreSQL plans each of a statement's first five executions on a ` +
        `connection anew, 1–2 ms for the larger ones); a session's seq bump and a parent's checkpoint update are ` +
        `heap-only updates (no indexed column changes, and their tables leave room on each page), so they write no ` +
        `index entries. What would remove more: ${remove.join('; ')}.`,
    );
  }
  const p2 = local?.profileW2;
  if (p2) {
    const drizzle = share(p2, (a) => a === 'npm: drizzle-orm');
    const driver = share(p2, (a) => /^npm: pg/.test(a));
    const socket = share(p2, (a) => /writev|writeBuffer/.test(a));
    const gc = share(p2, (a) => a === '(garbage collector)');
    const busy = (100 * p2.busyMs) / p2.wallMs;
    const bound =
      busy >= 75
        ? "is CPU-bound in the engine's process"
        : "is only partly CPU-bound in the engine's process";
    out.push(
      `**W2** ${bound} (main thread busy ${n(busy, 0)}% in a profiled run on PostgreSQL + in-process queue; ` +
        `PostgreSQL shares the same two cores). Steps of different invocations that finish together commit together: ` +
        `their statements go to the server as one batch of \`EXECUTE\`s of the prepared statements on one connection ` +
        `(one round trip, one transaction, one WAL flush for the batch), and each step gets its own statement's rows ` +
        `(src/store/db/database.ts \`runBatch\`). Unfollowed sessions send no NOTIFY, so these commits no longer queue ` +
        `on NOTIFY's database-wide lock. In the engine's process: the pg driver ${n(driver, 0)}% of the wall time, ` +
        `drizzle-orm ${n(drizzle, 0)}%, socket writes ${n(socket, 0)}%, GC ${n(gc, 0)}%. What is left is CPU on both ` +
        `sides: on the server, each step's statement (it settles the leaf, advances the parent, stores the event and ` +
        `inserts and claims the next leaf: five row writes, two of them heap-only, and about 3 KiB of WAL); in the ` +
        `engine, building each ` +
        `step's values and parsing its answer. Fewer row versions per step (the leaf's insert and its completion could ` +
        `be one row write when the step is short) and a leaner answer would reduce both.`,
    );
  }
  const w3 = best(report, PG_MODES, 'w3');
  const c3 = w3 ? counts(report, w3.name, 'w3') : undefined;
  const floor3 = figure(report, 'floor-bullmq-upsert', 'w3');
  if (w3 && c3) {
    out.push(
      `**W3** (${n(w3.figure.median, 0)} ms, of which 200 ms is the leaves' sleep; the design floor took ` +
        `${n(floor3?.median, 0)} ms in this run): 51 leaf steps of ${n(c3.statements, 1)} statements and ` +
        `${n(c3.writeTransactions)} write transactions each. Branches no longer queue on the parent's row one by one: ` +
        `a branch's end records its status in the parent's checkpoint without reading its siblings, and branches of ` +
        `one parent that end together are written in one statement (group commit in the worker); the root's advance ` +
        `inserts the parallel already advanced, with its branches, and claims them for the worker that runs it as it ` +
        `inserts them (as many as that process has idle slots; with a shared queue only the rest are queued), so the ` +
        `branches start with no statement and no queue trip of their own; and the join is one statement without a ` +
        `transaction: the last batch of ends returns the parallel's checkpoint (every branch's status and escalation ` +
        `are recorded there) and the root's row, and one statement ends the parallel, advances the root and claims the ` +
        `join leaf (both rows guarded: as read, or nothing is written), run by the worker whose batch settled the last ` +
        `branch. What remains is a chain of round trips on ` +
        `each side of the sleep: before it, the enqueue and the root's advance, then starting 50 steps in one process; ` +
        `after it, the batched ends (two batches when the 50 timers' callbacks take longer than the first batch's ` +
        `round trip: they lock the same parent row, so the second waits for the first), the join's statement and the ` +
        `join leaf's, whose commit's notification hands \`wait\` the run's view. The first measured runs are the slowest: each pool connection plans a ` +
        `statement the first time it runs it, and W3's statements are run too rarely to have reached every ` +
        `connection.` +
        (floor3 && floor3.median > 230
          ? ` The target (230 ms) is below what the design floor itself took in this run.`
          : ''),
    );
  }
  const pgq = counts(report, 'agentloom-pg-pgqueue-1', 'w1');
  const redis = counts(report, 'agentloom-pg-redis-1', 'w1');
  if (pgq && redis) {
    out.push(
      `**PostgreSQL-only mode**: BullMQ's PostgreSQL backend adds ${n(pgq.statements - redis.statements, 1)} ` +
        `statements, ${n(pgq.writeTransactions - redis.writeTransactions)} write transactions and ` +
        `${n((pgq.walBytes - redis.walBytes) / 1024, 1)} KiB of WAL per step over the Redis mode (the queue's own ` +
        `job rows, written durably).`,
    );
  }
  const lite = figure(report, 'agentloom-pglite', 'w1');
  const localW1 = figure(report, 'agentloom-pg-local', 'w1');
  if (lite && localW1) {
    out.push(
      `**Embedded PGlite** (${n(lite.median)} ms per step vs ${n(localW1.median)} on PostgreSQL with the same ` +
        `in-process queue): the hot statements are prepared once per PGlite instance through its wire-protocol ` +
        `entry point, so each step is one Bind/Execute exchange; what is left is the statement's execution in the ` +
        `WebAssembly engine and its page writes through the emulated file system, on the same thread as the engine.`,
    );
  }
  return out.map((line) => `- ${line}`).join('\n');
}
