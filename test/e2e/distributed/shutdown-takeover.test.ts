/**
 * Worker exits. SIGTERM during a step: the worker lets the running step finish within the
 * grace period and exits 0; the run completes with no model call repeated. SIGKILL of the worker holding a step:
 * the time until the step runs elsewhere is reported (not asserted).
 */
import { describe, expect, it } from 'vitest';
import {
  auditModelCalls,
  auditToolCalls,
  Cluster,
  enqueueRuns,
  fileServices,
  nodeLease,
  waitForMarks,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { SLOW_STEP_MS } from '../fixtures/distributed-apps.js';

const GRACE_MS = 10_000;
const { options, engine, db } = await fileServices({ graceMs: GRACE_MS });

describe('distributed worker exits', () => {
  it('SIGTERM mid-step: the step finishes within the grace period, exit 0, no model call repeated', async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1);
    const { ids, runs } = await enqueueRuns(engine, 'shutdown', 1, 'sigterm');
    const id = ids[0] as string;
    await waitForMarks(db, 'tool-start', id);
    first?.signal('SIGTERM');
    const termAtMs = Date.now();
    const exit = await first?.exited;
    const exitMs = (exit?.atMs ?? Infinity) - termAtMs;
    console.log(
      `sigterm: exited ${JSON.stringify(exit)} ${exitMs} ms after SIGTERM (tool takes ${SLOW_STEP_MS} ms)`,
    );
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exitMs).toBeLessThan(GRACE_MS);
    expect(first?.logLines().some((l) => l.msg === 'worker stopped')).toBe(true);
    // The running step was allowed to finish on the stopping worker.
    const finished = await waitForMarks(db, 'tool-finish', id);
    expect(finished.map((m) => m.pid)).toEqual([first?.pid]);
    expect((await nodeLease(db, id, 'slow'))?.status).toBe('completed');

    // The rest of the run goes on another worker.
    await cluster.start(1);
    const done = await engine.wait(id, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('next done');
    const models = await auditModelCalls(db, db, runs);
    expect(models).toMatchObject({ calls: 3, modelEvents: 3, violations: [] });
    const tools = await auditToolCalls(db, db, [id]);
    expect(tools).toMatchObject({ keys: 1, executions: 1, duplicatedResponses: [], keysWithoutResponse: [] });
  });

  it('reports how long a step held by a SIGKILLed worker takes to run elsewhere', async () => {
    const cluster = new Cluster(options);
    await cluster.start(2);
    const { ids } = await enqueueRuns(engine, 'gated', 1, 'takeover');
    const id = ids[0] as string;
    // The first execution of the tool waits for a gate nobody opens: the step stays on its worker.
    await waitForMarks(db, 'tool-start', id);
    const held = await nodeLease(db, id, 'writer');
    const victim = cluster.byPid(held?.pid ?? -1);
    expect(victim).toBeDefined();
    victim?.signal('SIGKILL');
    const killedAtMs = Date.now();
    const claimed = await waitFor(
      async () => {
        const now = await nodeLease(db, id, 'writer');
        return now && now.attempt > (held?.attempt ?? 0) && now.pid !== victim?.pid ? now : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20, what: 'another worker to claim the step' },
    );
    const claimedMs = Date.now() - killedAtMs;
    const rerun = await waitForMarks(db, 'tool-start', id, { count: 2 });
    const rerunMs = (rerun[1]?.atMs ?? Infinity) - killedAtMs;
    console.log(
      `takeover: with --lease-ms ${options.leaseMs}, the step was re-claimed (attempt ${held?.attempt} → ` +
        `${claimed.attempt}, pid ${held?.pid} → ${claimed.pid}) ${claimedMs} ms after SIGKILL; its tool call ` +
        `started again ${rerunMs} ms after SIGKILL`,
    );
    expect((await engine.wait(id, { timeoutMs: 60_000 })).status).toBe('completed');
  });
});
