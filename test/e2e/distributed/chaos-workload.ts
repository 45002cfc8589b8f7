/**
 * The chaos workload shared by the chaos tests: N invocations of the fixture's `chaos` app (Sequential →
 * Parallel of 3 → Loop of 3 → a leaf with a model call, a tool call and an answer), optionally with a killer
 * and with disruptions (Redis flushed or killed, PostgreSQL restarted) at given points of progress, then the
 * audits that prove each stored tool call took effect under exactly one key and no stored model call was made
 * again.
 */
import type pg from 'pg';
import { expect } from 'vitest';
import type { Engine } from '../../../src/index.js';
import {
  auditModelCalls,
  auditToolCalls,
  enqueueRuns,
  startKiller,
  statusCounts,
  Cluster,
  type ClusterOptions,
  type Kill,
  type ModelAudit,
  type ToolAudit,
  type WorkerProcess,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { CHAOS_BRANCHES, CHAOS_ITERATIONS } from '../fixtures/distributed-apps.js';

/** Most batches of runs one chaos test enqueues while waiting for its kills. */
const MAX_BATCHES = 4;

/** Leaves per chaos invocation (one tool call and two model calls each), plus the final `report` leaf. */
const LEAVES = CHAOS_BRANCHES * CHAOS_ITERATIONS;
/** Nodes per invocation: root, fan, loops, leaves, report. */
const NODES = 2 + CHAOS_BRANCHES + LEAVES + 1;

/** Something done to the cluster's services once a share of the work is done. */
export interface Disruption {
  name: string;
  /** Share of all nodes completed (0–1) at which it runs. */
  atProgress: number;
  run(): Promise<void>;
}

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  engine: Engine;
  cluster: Cluster;
  /** The engine's database (invocations, nodes, events). */
  engineDb: pg.Pool;
  /** The fixture ledger's database (the engine's unless a test moved it). */
  ledgerDb: pg.Pool;
  tag: string;
  count?: number;
  /** SIGKILL a random worker (and start a new one) about this often; no killer when absent. */
  killEveryMs?: number;
  /**
   * With a killer: the kills that must hit the work. A batch that completes before that many more is followed by
   * another (at most {@link MAX_BATCHES} in all), so a fast machine cannot make the test pass with no crash in it.
   */
  minKills?: number;
  disruptions?: Disruption[];
  timeoutMs?: number;
}

/** What happened in a chaos run. */
export interface ChaosResult {
  ids: string[];
  runs: Map<string, string>;
  kills: Kill[];
  elapsedMs: number;
  tools: ToolAudit;
  models: ModelAudit;
}

async function progress(db: pg.Pool, ids: string[]): Promise<number | undefined> {
  const result = await db
    .query<{ n: number }>(
      "SELECT count(*)::int AS n FROM nodes WHERE invocation_id = ANY($1) AND status = 'completed'",
      [ids],
    )
    .catch(() => undefined);
  return result ? (result.rows[0]?.n ?? 0) / (ids.length * NODES) : undefined;
}

/**
 * The chaos tests' setting: three workers of a new cluster on `clusterOptions` (the first migrates a new server),
 * `started` shown them, then the workload run by `engine` — or by the engine `producer` makes once they are up.
 */
export async function runChaosOnWorkers(
  clusterOptions: ClusterOptions,
  options: Omit<ChaosOptions, 'cluster' | 'engine'> &
    ({ engine: Engine } | { producer: () => Promise<Engine> }),
  started: (workers: WorkerProcess[]) => void = () => undefined,
): Promise<{ result: ChaosResult; cluster: Cluster; workers: WorkerProcess[] }> {
  const cluster = new Cluster(clusterOptions);
  const workers = await cluster.start(3);
  started(workers);
  const engine = 'engine' in options ? options.engine : await options.producer();
  const result = await runChaos({ ...options, engine, cluster });
  return { result, cluster, workers };
}

/** Runs the workload until every invocation completed (failing fast if one fails), then audits it. */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const { engine, cluster, engineDb, ledgerDb } = options;
  const count = options.count ?? 50;
  const startedMs = Date.now();
  const { ids, runs } = await enqueueRuns(engine, 'chaos', count, options.tag);
  let batches = 1;
  const killer = options.killEveryMs
    ? startKiller(cluster, { everyMs: options.killEveryMs, db: engineDb })
    : undefined;
  const pending = [...(options.disruptions ?? [])].sort((a, b) => a.atProgress - b.atProgress);
  let kills: Kill[] = [];
  let reportedAtMs = startedMs;
  try {
    await waitFor(
      async () => {
        // A worker that died on its own (not by the killer) fails the test now, with its log.
        const crashed = cluster.workers.find((w) => w.exit && !killer?.kills.some((k) => k.pid === w.pid));
        if (crashed) {
          throw new Error(
            `worker ${crashed.name} exited by itself (${JSON.stringify(crashed.exit)}):\n${crashed.tail()}`,
          );
        }
        const done = await progress(engineDb, ids);
        if (done === undefined) return false; // the database is being restarted
        if (Date.now() - reportedAtMs > 10_000) {
          // A progress line every 10 s: what a timeout looked like from here.
          reportedAtMs = Date.now();
          const alive = cluster.alive();
          console.log(
            `chaos[${options.tag}]: ${(done * 100).toFixed(0)} % of nodes done after ${((reportedAtMs - startedMs) / 1000).toFixed(0)} s; ` +
              `${alive.length} workers (${alive.filter((w) => w.started).length} started); kills ${killer?.kills.length ?? 0}`,
          );
        }
        for (let next = pending[0]; next && done >= next.atProgress; next = pending[0]) {
          pending.shift();
          console.log(`chaos[${options.tag}]: ${next.name} at ${(done * 100).toFixed(0)} % of nodes done`);
          await next.run();
        }
        const counts = await statusCounts(engineDb, ids).catch(() => undefined);
        if (!counts) return false;
        if (counts.failed || counts.cancelled) {
          const { rows } = await engineDb.query(
            "SELECT id, status, error FROM invocations WHERE id = ANY($1) AND status IN ('failed', 'cancelled') LIMIT 3",
            [ids],
          );
          throw new Error(`chaos invocations ended badly: ${JSON.stringify(counts)} ${JSON.stringify(rows)}`);
        }
        if ((counts.completed ?? 0) < ids.length) return false;
        if (killer && killer.kills.length < (options.minKills ?? 0) && batches < MAX_BATCHES) {
          // Done before enough kills hit it: more work, so the kills still to come land on running steps.
          const more = await enqueueRuns(engine, 'chaos', count, `${options.tag}-${batches++}`);
          ids.push(...more.ids);
          for (const [id, run] of more.runs) runs.set(id, run);
          return false;
        }
        return true;
      },
      {
        timeoutMs: options.timeoutMs ?? 180_000,
        intervalMs: 250,
        what: `${count} chaos invocations to complete`,
      },
    );
  } finally {
    kills = killer ? await killer.stop() : [];
  }
  const elapsedMs = Date.now() - startedMs;
  const tools = await auditToolCalls(engineDb, ledgerDb, ids);
  const models = await auditModelCalls(engineDb, ledgerDb, runs);
  console.log(
    `chaos[${options.tag}]: ${ids.length} runs completed in ${(elapsedMs / 1000).toFixed(1)} s; ` +
      `kills ${kills.length} (holding ${kills.map((k) => k.heldSteps).join('+') || 0} steps); tool executions ${tools.executions} for ${tools.keys} keys ` +
      `(${tools.executions - tools.keys} re-runs of interrupted calls); model calls ${models.calls} for ` +
      `${models.modelEvents} stored model events; steps re-claimed ${models.reclaims}`,
  );
  return { ids, runs, kills, elapsedMs, tools, models };
}

/**
 * The guarantees of the failure model, checked from the outside:
 * - every tool call whose response was stored took effect under exactly one ledger key, no key exists without
 *   a stored response, no response is stored twice, and no call was executed after its response was stored;
 * - per invocation and agent, model calls made exceed model events stored by at most the number of times the
 *   agent's steps were re-claimed (a call in flight when its worker died);
 * - with `modelCallsBoundedByKills`, overall, model calls exceed stored model events by at most the steps the
 *   killed workers held when they died (one interrupted call per step; with --concurrency 1 that is one per
 *   kill, the bound of the issue: a worker running 64 steps can lose up to 64 answered-but-unstored calls).
 */
export function expectChaosGuarantees(result: ChaosResult, { modelCallsBoundedByKills = true } = {}): void {
  const count = result.ids.length;
  const { tools, models } = result;
  expect(tools.storedResponses).toBe(count * LEAVES);
  expect(tools.duplicatedResponses).toEqual([]);
  expect(tools.doubleEffects).toEqual([]);
  expect(tools.keysWithoutResponse).toEqual([]);
  expect(tools.responsesWithoutKey).toEqual([]);
  expect(tools.keys).toBe(tools.storedResponses);
  expect(tools.executionsAfterStored).toEqual([]);
  // Two model calls per leaf and one for the report.
  expect(models.modelEvents).toBe(count * (2 * LEAVES + 1));
  expect(models.violations).toEqual([]);
  if (modelCallsBoundedByKills) {
    const held = result.kills.reduce((sum, k) => sum + k.heldSteps, 0);
    expect(models.calls).toBeLessThanOrEqual(models.modelEvents + held);
  }
}
