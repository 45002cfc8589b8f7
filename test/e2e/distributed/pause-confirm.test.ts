/**
 * A pause outlives every worker: a run paused for a tool confirmation while all workers are
 * stopped; the confirmation is given from the test process's producer engine (no worker in it); a new worker
 * starts and the run completes, the confirmed tool having run exactly once.
 */
import { describe, expect, it } from 'vitest';
import {
  auditModelCalls,
  Cluster,
  enqueueRuns,
  fileServices,
  invocationHistory,
} from '../../support/processes/cluster.js';

const { options, engine, db } = await fileServices();

describe('distributed pause for confirmation', () => {
  it('resumes a confirmation given while no worker runs, on a worker started afterwards', async () => {
    const cluster = new Cluster(options);
    const [first] = await cluster.start(1);
    const { ids, runs } = await enqueueRuns(engine, 'confirm', 1, 'confirm');
    const id = ids[0] as string;
    const paused = await engine.wait(id, { timeoutMs: 60_000 });
    expect(paused.status).toBe('paused');
    const pending = paused.pending[0];
    expect(pending).toMatchObject({ kind: 'confirmation', name: 'publish', args: { post: 'hello world' } });

    // Every worker stops (gracefully), then the human answers.
    first?.signal('SIGTERM');
    expect(await first?.exited).toMatchObject({ code: 0 });
    expect(cluster.alive()).toHaveLength(0);
    await engine.confirm(pending?.callId as string, { confirmed: true, by: 'e2e' });
    expect((await engine.get(id)).status).not.toBe('completed');
    const before = await db.query('SELECT 1 FROM e2e_tool_ledger WHERE split_part(key, $2, 1) = $1', [
      id,
      ':',
    ]);
    expect(before.rows).toHaveLength(0);

    const [second] = await cluster.start(1);
    const done = await engine.wait(id, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('approver done');
    // The confirmed call ran once, on the new worker, under the original call's idempotency key.
    const { rows } = await db.query<{ key: string; pid: number }>(
      'SELECT key, pid FROM e2e_tool_runs WHERE split_part(key, $2, 1) = $1',
      [id, ':'],
    );
    expect(rows).toEqual([{ key: `${id}:${pending?.originalCallId}`, pid: second?.pid }]);
    const history = await invocationHistory(engine, id);
    expect(history.slice(-3)).toEqual([
      'user: response adk_request_confirmation {"confirmed":true}',
      'approver: response publish {"published":"hello world"}',
      'approver: text "approver done"',
    ]);
    expect(history.filter((l) => l.startsWith('approver: response publish {"published"'))).toHaveLength(1);
    const models = await auditModelCalls(db, db, runs);
    expect(models).toMatchObject({ calls: 2, modelEvents: 2, violations: [] });
  });
});
