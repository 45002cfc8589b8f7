/**
 * The MCP server's question to the user (elicitation) while a McpToolset call is open, against a real MCP server
 * built with @modelcontextprotocol/sdk (test/fixtures/mcp-server.ts) over stdio and over Streamable HTTP, on
 * PostgreSQL: answered through the HTTP API (bad answers refused, naming the field), declined when nobody answers
 * within the call timeout, and withdrawn with the call cancelled at the server when the run is cancelled. The
 * server's call log says what it saw.
 */
import { describe, expect, it } from 'vitest';
import { LlmAgent } from '../../src/index.js';
import { createApiServer } from '../../src/api/index.js';
import { REQUEST_ELICITATION } from '../../src/agents/llm/journal.js';
import { invocationToolRequests } from '../../src/store/repos/queries.js';
import {
  calls,
  callsOnce,
  mcpHarness,
  scratchDir,
  storedResponses,
  transports,
} from '../support/scenarios/mcp-toolset.js';
import { waitFor } from '../support/assert/wait-for.js';

const dir = scratchDir();

describe.each(transports)('McpToolset elicitation over $name', (transport) => {
  const { toolset, engineWith } = mcpHarness(transport, dir);

  it("asks the user the server's question while the call is open: answered through the HTTP API", async () => {
    const { toolset: tools, log } = await toolset({ prefix: 'srv' });
    const engine = await engineWith(
      new LlmAgent({
        name: 'greeter',
        model: callsOnce('srv_ask', { question: 'Who are you?' }),
        tools: [tools],
      }),
    );
    const api = await createApiServer({ engine, processMetrics: false });
    const base = await api.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const waiting = await waitFor(
        async () => (await engine.get(invocationId)).pending.find((p) => p.kind === 'elicitation'),
        { timeoutMs: 60_000, what: 'the elicitation to be pending' },
      );
      // The call is open and the step holds its worker: the run is running, not paused.
      expect((await engine.get(invocationId)).status).toBe('running');
      const callId = (await engine.getSession((await engine.get(invocationId)).sessionId)).events
        .flatMap((e) => e.content?.parts ?? [])
        .find((p) => p.functionCall?.name === 'srv_ask')?.functionCall?.id;
      expect(waiting).toMatchObject({
        kind: 'elicitation',
        name: 'srv_ask',
        args: { question: 'Who are you?' },
        originalCallId: callId,
        elicitation: {
          message: 'Who are you?',
          source: 'srv',
          requestedSchema: { type: 'object', required: ['name'] },
        },
      });
      // The inbox lists it too.
      const inbox = (await (await fetch(`${base}/v1/pending?kind=elicitation`)).json()) as {
        calls: { callId: string }[];
      };
      expect(inbox.calls.map((c) => c.callId)).toContain(waiting.callId);

      const answer = (response: unknown) =>
        fetch(`${base}/v1/invocations/${invocationId}/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-agentloom-actor': 'ada' },
          body: JSON.stringify({ functionResponses: [{ id: waiting.callId, response }] }),
        });
      // Content that does not match the requested schema is refused, naming the field; nothing is stored.
      const bad = await answer({ action: 'accept', content: { age: -3 } });
      expect(bad.status).toBe(400);
      const badBody = (await bad.json()) as { error: { code: string; message: string; details: unknown } };
      expect(badBody.error).toMatchObject({ code: 'VALIDATION', details: { field: 'response.content' } });
      expect(badBody.error.message).toMatch(/name/);
      const noAction = await answer({ name: 'Ada' });
      expect(noAction.status).toBe(400);
      expect(((await noAction.json()) as { error: { message: string } }).error.message).toMatch(
        /"action": "accept"/,
      );
      expect((await engine.get(invocationId)).pending).toHaveLength(1);

      const good = await answer({ action: 'accept', content: { name: 'Ada', age: 36 } });
      expect(good.status).toBe(200);
      const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(done.status).toBe('completed');
      const result = { action: 'accept', content: { name: 'Ada', age: 36 } };
      expect(calls(log).filter((c) => c.end === 'done')).toMatchObject([{ tool: 'ask', answer: result }]);
      const [stored] = (await storedResponses(engine, invocationId, 'srv_ask')) as {
        content: { text: string }[];
        isError: boolean;
      }[];
      expect(stored?.isError).toBe(false);
      expect(JSON.parse(stored!.content[0]!.text)).toEqual(result);
      // The question and the answer are events; the model never sees them.
      const events = (await engine.getSession(done.sessionId)).events;
      const asked = events.find((e) =>
        e.content?.parts.some((p) => p.functionCall?.name === REQUEST_ELICITATION),
      );
      expect(asked?.content?.parts[0]?.functionCall).toMatchObject({
        id: waiting.callId,
        args: { functionCallId: callId, message: 'Who are you?', source: 'srv' },
      });
      const answered = events.find((e) =>
        e.content?.parts.some((p) => p.functionResponse?.name === REQUEST_ELICITATION),
      );
      expect(answered).toMatchObject({ author: 'user' });
      expect(answered?.content?.parts[0]?.functionResponse).toMatchObject({
        id: waiting.callId,
        response: result,
      });
      const trail = (await (await fetch(`${base}/v1/invocations/${invocationId}/requests`)).json()) as {
        requests: unknown[];
      };
      expect(trail.requests).toMatchObject([
        {
          callId: waiting.callId,
          kind: 'elicitation',
          status: 'answered',
          answeredBy: 'ada',
          response: result,
        },
      ]);
      // Answering again after the call ended: a conflict, not a second answer.
      expect((await answer({ action: 'decline' })).status).toBe(409);
    } finally {
      await api.close();
    }
  });

  it('declines an elicitation nobody answers within the call timeout, and the call ends', async () => {
    const { toolset: tools, log } = await toolset({ timeoutMs: 1_500 });
    const engine = await engineWith(
      new LlmAgent({ name: 'greeter', model: callsOnce('ask', { question: 'Anyone?' }), tools: [tools] }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    // The time spent waiting for a human is not the call's: it ended with the server's answer, not a timeout.
    const declined = { action: 'decline' };
    expect(calls(log).filter((c) => c.end === 'done')).toMatchObject([{ tool: 'ask', answer: declined }]);
    expect(await storedResponses(engine, invocationId, 'ask')).toEqual([
      { content: [{ type: 'text', text: JSON.stringify(declined) }], isError: false },
    ]);
    const [request] = await invocationToolRequests(engine.store.db, invocationId);
    expect(request).toMatchObject({
      kind: 'elicitation',
      status: 'expired',
      response: { action: 'decline' },
    });
    const events = (await engine.getSession(done.sessionId)).events;
    const expiry = events.find((e) =>
      e.content?.parts.some((p) => p.functionResponse?.name === REQUEST_ELICITATION),
    );
    expect(expiry?.content?.parts[0]?.functionResponse?.response).toMatchObject({
      action: 'decline',
      reason: 'no answer within 1500 ms',
    });
  });

  it('withdraws a waiting elicitation and cancels the call at the server when the run is cancelled', async () => {
    // A server that reads its input late gets the call's cancellation and whatever the client sends next in one
    // read, where its SDK handles a response before a notification: the question must not be answered as if the
    // user had dismissed it, or the server finishes the call on that answer instead of cancelling it.
    const { toolset: tools, log } = await toolset({}, { MCP_STDIN_HOLD_MS: '500' });
    const engine = await engineWith(
      new LlmAgent({
        name: 'greeter',
        model: callsOnce('ask', { question: 'Still there?' }),
        tools: [tools],
      }),
    );
    const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const waiting = await waitFor(
      async () => (await engine.get(invocationId)).pending.find((p) => p.kind === 'elicitation'),
      { timeoutMs: 60_000, what: 'the elicitation to be pending' },
    );
    expect((await engine.cancel(invocationId)).status).toBe('cancelled');
    const ended = await waitFor(() => calls(log).find((c) => c.end !== 'started'), {
      timeoutMs: 30_000,
      what: 'the server to end the call',
    });
    // Not `done` with `{action: 'cancel'}`: nobody dismissed the question, the call was cancelled.
    expect(ended).toMatchObject({ tool: 'ask', end: 'cancelled' });
    expect(calls(log).filter((c) => c.end === 'done')).toEqual([]);
    expect(await invocationToolRequests(engine.store.db, invocationId)).toMatchObject([
      { callId: waiting.callId, status: 'cancelled' },
    ]);
    await expect(
      engine.respond({
        invocationId,
        functionResponses: [{ id: waiting.callId, response: { action: 'decline' } }],
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});
