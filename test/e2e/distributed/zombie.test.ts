/**
 * Zombie worker: the worker running a step is SIGSTOPped mid tool call (found through the node's
 * lease owner), kept stopped past its lease while another worker takes the step over and finishes the run, then
 * SIGCONTed. Its writes are refused (FENCED), it makes no model call, no event is duplicated, and the run's
 * history equals an undisturbed run's of the same input.
 */
import { describe, expect, it } from 'vitest';
import {
  auditToolCalls,
  Cluster,
  enqueueRuns,
  fileServices,
  invocationHistory,
  nodeLease,
  openGate,
  waitForMarks,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';

// A superseded step is logged at warn ("step superseded: …", err.code FENCED), so default logs show it.
const { options, engine, db } = await fileServices({});

describe('distributed zombie worker', () => {
  it('fences a worker stopped past its lease: no write, no model call, same history as an undisturbed run', async () => {
    const cluster = new Cluster(options);
    await cluster.start(2);

    // The undisturbed run: its gate is open before it starts.
    await openGate(db, 'release:zombie-base-0');
    const base = await enqueueRuns(engine, 'gated', 1, 'zombie-base');
    const baseId = base.ids[0] as string;
    expect((await engine.wait(baseId, { timeoutMs: 60_000 })).status).toBe('completed');

    const { ids } = await enqueueRuns(engine, 'gated', 1, 'zombie');
    const id = ids[0] as string;
    // The first execution of the tool is running (and waits for the gate): stop the worker that holds the step.
    const [first] = await waitForMarks(db, 'tool-start', id);
    const held = await nodeLease(db, id, 'writer');
    expect(held?.status).toBe('running');
    const zombie = cluster.byPid(held?.pid ?? -1);
    expect(zombie, `lease owner ${held?.owner} is one of our workers`).toBeDefined();
    expect(first?.pid).toBe(zombie?.pid);
    zombie?.signal('SIGSTOP');
    const stoppedAtMs = Date.now();

    // Another worker takes the step over once the lease lapsed (a new attempt, another owner) and finishes.
    const takeover = await waitFor(
      async () => {
        const now = await nodeLease(db, id, 'writer');
        return now && now.attempt > (held?.attempt ?? 0) && now.pid !== zombie?.pid ? now : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'another worker to claim the stopped step' },
    );
    console.log(
      `zombie: step re-claimed ${Date.now() - stoppedAtMs} ms after SIGSTOP (attempt ${held?.attempt} → ${takeover.attempt})`,
    );
    expect((await engine.wait(id, { timeoutMs: 60_000 })).status).toBe('completed');
    const historyBefore = await invocationHistory(engine, id);

    // Wake the zombie with its tool released: the tool finishes, and every write after it must be refused.
    await openGate(db, 'release:zombie-0');
    zombie?.signal('SIGCONT');
    const continuedAtMs = Date.now();
    await waitFor(
      async () => {
        const { rows } = await db.query('SELECT 1 FROM e2e_tool_runs WHERE key = $1 AND pid = $2', [
          first?.key,
          zombie?.pid,
        ]);
        return rows.length > 0;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: "the zombie's tool call to finish" },
    );
    const fenced = await waitFor(
      () =>
        zombie
          ?.logLines()
          .find(
            (l) =>
              l.invocationId === id &&
              l.attempt === held?.attempt &&
              (l.err as { code?: string } | undefined)?.code === 'FENCED',
          ),
      { timeoutMs: 30_000, intervalMs: 50, what: 'the zombie to log that its step was fenced' },
    );
    console.log(
      `zombie: fenced: ${JSON.stringify(fenced.msg)} ${(fenced.err as { message?: string }).message}`,
    );

    // Nothing it did after the pause reached the run.
    expect(await invocationHistory(engine, id)).toEqual(historyBefore);
    expect(historyBefore).toEqual(await invocationHistory(engine, baseId));
    const modelCalls = await db.query('SELECT 1 FROM e2e_model_calls WHERE pid = $1 AND at_ms >= $2', [
      zombie?.pid,
      stoppedAtMs,
    ]);
    expect(modelCalls.rows).toHaveLength(0);
    const tools = await auditToolCalls(db, db, [id]);
    expect(tools.duplicatedResponses).toEqual([]);
    expect(tools.keys).toBe(1);
    expect(tools.storedResponses).toBe(1);
    // The call the zombie had in flight finished after the pause: its effect repeats under the same key.
    expect(tools.executions).toBe(2);
    const { rows: events } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM events WHERE invocation_id = $1',
      [id],
    );
    console.log(
      `zombie: ${events[0]?.n} events, fenced ${Date.now() - continuedAtMs} ms after SIGCONT; history:\n  ${historyBefore.join('\n  ')}`,
    );
  });
});
