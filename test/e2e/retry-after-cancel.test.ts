/**
 * Retry after cancel on PostgreSQL with a real `agentloom worker` process (BullMQ on Redis): a run
 * cancelled while paused for a confirmation or a long-running call asks again under a new call id when retried
 * (the cancelled request stays cancelled), and completes after the answer with the tool run once; a run cancelled
 * while its leaf ran completes once retried. The producer engine in this process runs no step.
 */
import { describe, expect, it } from 'vitest';
import type { InvocationView } from '../../src/index.js';
import { Cluster, enqueueRuns, fileServices, openGate, waitForMarks } from '../support/processes/cluster.js';

// A lease no busy machine outlasts: nothing here may be taken over.
const { options, engine, db } = await fileServices({ leaseMs: 15_000 });

async function requestStatus(id: string, callId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ status: string }>(
    'SELECT status FROM tool_requests WHERE invocation_id = $1 AND call_id = $2',
    [id, callId],
  );
  return rows[0]?.status;
}

async function toolRuns(id: string, tool: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM e2e_tool_runs WHERE split_part(key, $2, 1) = $1 AND tool = $3',
    [id, ':', tool],
  );
  return rows[0]?.n ?? -1;
}

/** Cancels a paused run, retries it, and returns its new pause (asserting the new call and the audit trail). */
async function cancelRetryRepause(id: string, first: InvocationView): Promise<InvocationView> {
  const old = first.pending[0]!;
  expect((await engine.cancel(id)).status).toBe('cancelled');
  expect((await engine.retry(id)).status).toBe('running');
  const again = await engine.wait(id, { timeoutMs: 60_000 });
  expect(again.status).toBe('paused');
  const renewed = again.pending[0]!;
  expect(renewed).toMatchObject({ kind: old.kind, name: old.name, originalCallId: old.originalCallId });
  expect(renewed.callId).not.toBe(old.callId);
  expect(await requestStatus(id, old.callId)).toBe('cancelled');
  expect(await requestStatus(id, renewed.callId)).toBe('pending');
  return again;
}

describe('retry after cancel on PostgreSQL with a worker process', () => {
  it('asks a confirmation again and runs the tool once after approval', async () => {
    const cluster = new Cluster(options);
    await cluster.start(1);
    const { ids } = await enqueueRuns(engine, 'confirm', 1, 'retry-confirm');
    const id = ids[0]!;
    const first = await engine.wait(id, { timeoutMs: 60_000 });
    expect(first.status).toBe('paused');
    const again = await cancelRetryRepause(id, first);
    await engine.confirm(again.pending[0]!.callId, { confirmed: true, by: 'e2e', invocationId: id });
    expect(await engine.wait(id, { timeoutMs: 60_000 })).toMatchObject({
      status: 'completed',
      output: 'approver done',
    });
    expect(await toolRuns(id, 'publish')).toBe(1);
  });

  it('waits again for a long-running call under a new id and completes with its answer', async () => {
    const cluster = new Cluster(options);
    await cluster.start(1);
    const { ids } = await enqueueRuns(engine, 'longrun', 1, 'retry-longrun');
    const id = ids[0]!;
    const first = await engine.wait(id, { timeoutMs: 60_000 });
    expect(first.pending[0]).toMatchObject({ kind: 'long_running', name: 'open_ticket' });
    const again = await cancelRetryRepause(id, first);
    await engine.respond({
      invocationId: id,
      functionResponses: [{ id: again.pending[0]!.callId, response: { status: 'resolved' } }],
    });
    expect(await engine.wait(id, { timeoutMs: 60_000 })).toMatchObject({
      status: 'completed',
      output: 'ticket says {"status":"resolved"}',
    });
    expect(await toolRuns(id, 'open_ticket')).toBe(1);
  });

  it('completes a run cancelled while its leaf ran, once retried', async () => {
    const cluster = new Cluster(options);
    await cluster.start(1);
    const { ids, runs } = await enqueueRuns(engine, 'gated', 1, 'retry-running');
    const id = ids[0]!;
    // The first execution of the tool is held at its gate: the leaf is running when the run is cancelled.
    await waitForMarks(db, 'tool-start', id, { timeoutMs: 60_000 });
    expect((await engine.cancel(id)).status).toBe('cancelled');
    expect((await engine.retry(id)).status).toBe('running');
    const done = await engine.wait(id, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect((await engine.nodes(id)).map((n) => [n.path, n.status])).toEqual([
      ['gated_flow', 'completed'],
      ['gated_flow/writer', 'completed'],
      ['gated_flow/summarizer', 'completed'],
    ]);
    // The held first execution never finished; the retried one wrote once.
    expect(await toolRuns(id, 'gated_write')).toBe(1);
    await openGate(db, `release:${[...runs.keys()][0]}`);
  });
});
