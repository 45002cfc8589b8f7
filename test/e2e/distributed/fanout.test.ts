/**
 * Fan-out across processes: three `agentloom worker` processes run a ParallelAgent of 12 branches
 * of 300 ms each. The branches ran in at least two processes and the run took well under 12 × 300 ms.
 */
import { describe, expect, it } from 'vitest';
import { Cluster, enqueueRuns, fileServices } from '../../support/processes/cluster.js';
import { FANOUT_BRANCHES, FANOUT_BRANCH_MS } from '../fixtures/distributed-apps.js';

const { options, engine, db } = await fileServices();

describe('distributed fan-out', () => {
  it('spreads 12 branches of 300 ms over the workers and runs them side by side', async () => {
    // Four steps at a time per worker: twelve branches need all three workers to run at once.
    const cluster = new Cluster({ ...options, concurrency: 4 });
    const workers = await cluster.start(3);
    // Warm-up run (first steps of a fresh process load code), not measured.
    const warm = await enqueueRuns(engine, 'fanout', 1, 'fanout-warm');
    expect((await engine.wait(warm.ids[0] as string, { timeoutMs: 60_000 })).status).toBe('completed');

    const startedMs = Date.now();
    const { ids, runs } = await enqueueRuns(engine, 'fanout', 1, 'fanout');
    const result = await engine.wait(ids[0] as string, { timeoutMs: 60_000 });
    const elapsedMs = Date.now() - startedMs;
    expect(result.status).toBe('completed');
    // The test process and the workers load the same apps module: the same definition hash.
    for (const w of workers) {
      const started = w.logLines().find((l) => l.msg === 'worker started') as
        { apps?: { name: string; definitionHash: string }[] } | undefined;
      expect(started?.apps?.find((a) => a.name === 'fanout')?.definitionHash).toBe(result.definitionHash);
    }

    const { rows } = await db.query<{ agent: string; pid: number; started_ms: string; finished_ms: string }>(
      'SELECT agent, pid, started_ms, finished_ms FROM e2e_branch_runs WHERE run = $1',
      [[...runs.keys()][0]],
    );
    expect(rows.map((r) => r.agent).sort()).toEqual(
      Array.from({ length: FANOUT_BRANCHES }, (_, i) => `branch_${i}`).sort(),
    );
    const pids = new Set(rows.map((r) => r.pid));
    const perPid = [...pids].map((pid) => `${pid}: ${rows.filter((r) => r.pid === pid).length}`);
    console.log(
      `fan-out: 12 × ${FANOUT_BRANCH_MS} ms branches in ${elapsedMs} ms on processes ${perPid.join(', ')}`,
    );
    expect(pids.size).toBeGreaterThanOrEqual(2);
    for (const pid of pids) expect(workers.map((w) => w.pid)).toContain(pid);
    expect(elapsedMs).toBeLessThan((FANOUT_BRANCHES * FANOUT_BRANCH_MS) / 2);
  });
});
