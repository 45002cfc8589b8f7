/**
 * Retry after cancel: a run cancelled while paused for a confirmation or a long-running call, once
 * retried, asks again under a new call id (the cancelled request stays cancelled in the audit trail), pauses, and
 * completes after the answer with the tool run once; a run cancelled while a leaf ran completes when retried.
 * On PGlite and PostgreSQL in one process; test/e2e/retry-after-cancel.test.ts runs it on a worker process.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { FunctionTool, SequentialAgent, type Engine, type InvocationView } from '../../src/index.js';
import { findToolRequest, type ToolRequestRow } from '../../src/store/repos/tool-requests.js';
import { call, gate, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

async function settled(engine: Engine, id: string): Promise<InvocationView> {
  return engine.wait(id, { timeoutMs: 30_000 });
}

async function requestRow(engine: Engine, id: string, callId: string): Promise<ToolRequestRow | undefined> {
  return findToolRequest(engine.store.db, callId, id);
}

/** Cancels a paused run, retries it, and returns the new pause (asserting what it must be). */
async function cancelRetryRepause(
  engine: Engine,
  id: string,
  first: InvocationView,
): Promise<InvocationView> {
  const old = first.pending[0]!;
  expect((await engine.cancel(id)).status).toBe('cancelled');
  expect(await requestRow(engine, id, old.callId)).toMatchObject({ status: 'cancelled' });
  expect((await engine.retry(id)).status).toBe('running');
  const again = await settled(engine, id);
  expect(again.status).toBe('paused');
  expect(again.pending).toHaveLength(1);
  const renewed = again.pending[0]!;
  expect(renewed).toMatchObject({ kind: old.kind, name: old.name, args: old.args, nodePath: old.nodePath });
  expect(renewed.originalCallId).toBe(old.originalCallId);
  expect(renewed.callId).not.toBe(old.callId);
  // The audit trail keeps the withdrawn call as it was, and the new one pending beside it.
  expect(await requestRow(engine, id, old.callId)).toMatchObject({ status: 'cancelled', answeredBy: null });
  expect(await requestRow(engine, id, renewed.callId)).toMatchObject({ status: 'pending' });
  return again;
}

describe.each(backends)('retry after cancel on $name', (backend) => {
  it('asks a confirmation again after cancel-while-paused, and runs the tool once after approval', async () => {
    let runs = 0;
    const publish = new FunctionTool({
      name: 'publish_post',
      description: 'publishes a post',
      parameters: z.object({ post: z.string() }),
      requireConfirmation: true,
      execute: ({ post }) => ({ published: post, run: ++runs }),
    });
    const writer = scripted('writer', 'a draft');
    const publisher = scripted(
      'publisher',
      (turn) => (turn.callIndex === 0 ? call('publish_post', { post: 'hello' }) : 'published'),
      { tools: [publish] },
    );
    const root = new SequentialAgent({ name: 'blog', subAgents: [writer, publisher] });
    const engine = await engineOn(backend, { apps: [{ name: 'blog', agent: root }] });
    try {
      const { invocationId: id } = await engine.enqueue({ app: 'blog', userId: 'u', input: 'go' });
      const first = await settled(engine, id);
      expect(first.status).toBe('paused');
      const again = await cancelRetryRepause(engine, id, first);
      expect(runs).toBe(0);
      await engine.confirm(again.pending[0]!.callId, { confirmed: true, by: 'ann', invocationId: id });
      const done = await settled(engine, id);
      expect(done).toMatchObject({ status: 'completed', output: 'published' });
      expect(runs).toBe(1);
      expect(await requestRow(engine, id, again.pending[0]!.callId)).toMatchObject({
        status: 'answered',
        answeredBy: 'ann',
      });
      // The withdrawn request can no longer be answered.
      await expect(
        engine.confirm(first.pending[0]!.callId, { confirmed: true, invocationId: id }),
      ).rejects.toMatchObject({ code: 'CONFLICT' });
    } finally {
      await engine.close();
    }
  });

  it('waits again for a long-running call after cancel-while-paused, under a new id', async () => {
    let started = 0;
    const ticket = new FunctionTool({
      name: 'open_ticket',
      description: 'opens a ticket handled by a human',
      isLongRunning: true,
      execute: () => ({ status: 'open', ticket: ++started }),
    });
    const desk = scripted(
      'desk',
      (turn) =>
        turn.callIndex === 0
          ? call('open_ticket')
          : `ticket says ${JSON.stringify(turn.contents.at(-1)?.parts[0]?.functionResponse?.response)}`,
      { tools: [ticket] },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'desk', agent: desk }] });
    try {
      const { invocationId: id } = await engine.enqueue({ app: 'desk', userId: 'u', input: 'help' });
      const first = await settled(engine, id);
      expect(first.pending[0]).toMatchObject({ kind: 'long_running', name: 'open_ticket' });
      const again = await cancelRetryRepause(engine, id, first);
      expect(again.pending[0]!.callId).toBe(`${first.pending[0]!.callId}~2`);
      await engine.respond({
        invocationId: id,
        functionResponses: [{ id: again.pending[0]!.callId, response: { status: 'resolved' } }],
        by: 'bob',
      });
      const done = await settled(engine, id);
      expect(done).toMatchObject({ status: 'completed', output: 'ticket says {"status":"resolved"}' });
      // The tool started its work once; the retry only waited again for its answer.
      expect(started).toBe(1);
    } finally {
      await engine.close();
    }
  });

  it('completes a run cancelled while a leaf ran, once retried', async () => {
    const held = gate();
    let executions = 0;
    const slow = new FunctionTool({
      name: 'slow_write',
      description: 'writes slowly',
      execute: async () => {
        executions++;
        // The first execution is held until the run was cancelled; a retried one finishes at once.
        if (executions === 1) await held.promise;
        return { written: executions };
      },
    });
    const worker = scripted('worker', (turn) => (turn.callIndex === 0 ? call('slow_write') : 'written'), {
      tools: [slow],
    });
    const after = scripted('after', 'all done');
    const root = new SequentialAgent({ name: 'flow', subAgents: [worker, after] });
    const engine = await engineOn(backend, { apps: [{ name: 'flow', agent: root }] });
    try {
      const { invocationId: id } = await engine.enqueue({ app: 'flow', userId: 'u', input: 'go' });
      await waitFor(() => executions === 1, { timeoutMs: 30_000 });
      expect((await engine.cancel(id)).status).toBe('cancelled');
      held.open();
      expect((await engine.retry(id)).status).toBe('running');
      const done = await settled(engine, id);
      expect(done).toMatchObject({ status: 'completed', output: 'all done' });
      const nodes = await engine.nodes(id);
      expect(nodes.map((n) => [n.path, n.status])).toEqual([
        ['flow', 'completed'],
        ['flow/worker', 'completed'],
        ['flow/after', 'completed'],
      ]);
    } finally {
      await engine.close();
    }
  });
});
