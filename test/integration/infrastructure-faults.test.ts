/**
 * Faults of the machinery are not failures of the run (ARCHITECTURE "Failure model"): a database error raised
 * inside a tool or a model client leaves the step uncommitted and the queue runs it again, resuming from its
 * journal; only an ordinary error of the tool reaches the model as an `{error}` response.
 */
import { describe, expect, it } from 'vitest';
import { FunctionTool, type ModelRequest } from '../../src/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

/** What node-postgres raises when the server is shut down under a query, wrapped as a tool's own code would. */
function lostConnection(): Error {
  const pgError = Object.assign(new Error('terminating connection due to administrator command'), {
    code: '57P01',
    severity: 'FATAL',
  });
  return new Error('customer lookup failed', { cause: pgError });
}

/** The function response the model saw in its second request (after the tool round). */
function responseSeen(requests: readonly ModelRequest[]): unknown {
  return requests[1]?.contents.flatMap((c) => c.parts).find((p) => p.functionResponse)?.functionResponse
    ?.response;
}

function lookupAgent(fail: (run: number) => Error | undefined) {
  let runs = 0;
  const lookup = new FunctionTool({
    name: 'lookup',
    description: 'looks a customer up',
    execute: () => {
      const err = fail(++runs);
      if (err) throw err;
      return { customer: 'ada', run: runs };
    },
  });
  const agent = scripted('clerk', (turn) => (turn.callIndex === 0 ? call('lookup') : 'done'), {
    tools: [lookup],
  });
  return { agent, runs: () => runs };
}

describe.each(backends)('infrastructure faults on $name', (backend) => {
  it('a tool that hits a lost database connection is run again, and the model never sees an error', async () => {
    const { agent, runs } = lookupAgent((run) => (run === 1 ? lostConnection() : undefined));
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'who?' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('done');
      expect(runs()).toBe(2);
      // The step was re-run (a second attempt), resuming from its journal: the stored model call was not repeated.
      expect((await engine.nodes(invocationId))[0]).toMatchObject({ path: 'clerk', attempt: 2 });
      expect(agent.model.calls).toBe(2);
      expect(responseSeen(agent.model.requests)).toEqual({ customer: 'ada', run: 2 });
      // No error response was ever stored for the call.
      const { events } = await engine.getSession(result.sessionId);
      const responses = events.flatMap((e) => e.content?.parts ?? []).filter((p) => p.functionResponse);
      expect(responses.map((p) => p.functionResponse?.response)).toEqual([{ customer: 'ada', run: 2 }]);
    } finally {
      await engine.close();
    }
  });

  it('a tool that throws an ordinary error gives the model an {error} response', async () => {
    const { agent, runs } = lookupAgent(() => new Error('no such customer'));
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'who?' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(runs()).toBe(1);
      expect((await engine.nodes(invocationId))[0]).toMatchObject({ path: 'clerk', attempt: 1 });
      expect(responseSeen(agent.model.requests)).toEqual({ error: 'no such customer' });
    } finally {
      await engine.close();
    }
  });

  it('a model client that hits a lost database connection does not fail the node', async () => {
    let modelErrors = 0;
    const agent = scripted(
      'writer',
      (turn) => {
        if (turn.callIndex === 0 && agent.model.calls === 1) throw lostConnection();
        return 'written';
      },
      {
        onModelErrorCallback: () => {
          modelErrors++;
          return undefined;
        },
      },
    );
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'write' });
      const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(result.status).toBe('completed');
      expect(result.output).toBe('written');
      expect(agent.model.calls).toBe(2);
      expect((await engine.nodes(invocationId))[0]).toMatchObject({ path: 'writer', attempt: 2 });
      // The machinery's fault is not the model's: the model-error callback was not consulted.
      expect(modelErrors).toBe(0);
    } finally {
      await engine.close();
    }
  });
});
