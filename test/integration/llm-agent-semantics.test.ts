/**
 * Conformance of LlmAgent and tools to SEMANTICS §3, §4 and §7, run by the real engine on PGlite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  AgentTool,
  FunctionTool,
  LlmAgent,
  ScriptedModel,
  SequentialAgent,
  type BaseAgent,
  type Engine,
  type Event,
} from '../../src/index.js';
import { call, scripted, seenText } from '../fixtures/agents.js';
import { waitFor } from '../support/assert/wait-for.js';
import { backends, engineOn, type Backend } from '../support/services/engines.js';

async function withEngine<T>(
  backend: Backend,
  agent: BaseAgent,
  fn: (engine: Engine) => Promise<T>,
): Promise<T> {
  const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

async function runOnce(
  engine: Engine,
  input = 'hi',
  extra: { maxLlmCalls?: number; stateDelta?: Record<string, unknown> } = {},
) {
  const { invocationId, sessionId } = await engine.enqueue({ app: 'app', userId: 'u1', input, ...extra });
  const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
  const events: Event[] = [];
  for await (const e of engine.events(invocationId)) events.push(e);
  return { invocationId, sessionId, result, events };
}

describe.each(backends)('LlmAgent on $name', (backend) => {
  it('fails with an error naming a missing template key; {key?} renders empty', async () => {
    const agent = scripted('a', 'x', { instruction: 'Use {missing_key} and {optional?}.' });
    await withEngine(backend, agent, async (engine) => {
      const { result } = await runOnce(engine);
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('TEMPLATE');
      expect(result.error?.message).toContain('missing_key');
      const ok = await runOnce(engine, 'again', { stateDelta: { missing_key: { n: 1 } } });
      expect(ok.result.status).toBe('completed');
      expect(agent.model.requests.at(-1)?.systemInstruction).toBe('Use {"n":1} and .');
    });
  });

  it('parses and validates outputSchema answers into outputKey', async () => {
    const schema = z.object({ title: z.string(), score: z.number() });
    let reply = '{"title":"T","score":3}';
    const agent = scripted('judge', () => reply, { outputSchema: schema, outputKey: 'verdict' });
    await withEngine(backend, agent, async (engine) => {
      const good = await runOnce(engine);
      expect(good.result.status).toBe('completed');
      expect((await engine.getSession(good.sessionId)).state.verdict).toEqual({ title: 'T', score: 3 });
      expect(agent.model.requests[0]?.responseSchema).toMatchObject({ type: 'object' });
      expect(agent.model.requests[0]?.tools).toEqual([]);
      reply = '{"title":"T","score":"high"}';
      const bad = await runOnce(engine);
      expect(bad.result.status).toBe('failed');
      expect(bad.result.error?.code).toBe('OUTPUT_SCHEMA');
      expect(bad.result.error?.message).toMatch(/score/);
    });
  });

  it("with includeContents 'none' sends only the current turn", async () => {
    const first = scripted('first', 'first answer');
    const second = scripted('second', 'second answer', { includeContents: 'none', instruction: 'sys' });
    await withEngine(
      backend,
      new SequentialAgent({ name: 'seq', subAgents: [first, second] }),
      async (engine) => {
        await runOnce(engine, 'hello there');
        const seen = seenText(second.model.requests[0] as never);
        expect(seen).not.toContain('hello there');
        expect(seen).toContain('first answer');
        expect(seenText(first.model.requests[0] as never)).toContain('hello there');
      },
    );
  });

  it('transfers to a sub-agent; the target runs as a child node and its answer ends the transferring node', async () => {
    const billing = scripted('billing', 'refund issued', { description: 'billing questions' });
    const support = scripted('support', 'I cannot help with that');
    const router = scripted(
      'router',
      (turn) => (turn.callIndex === 0 ? call('transfer_to_agent', { agent_name: 'billing' }) : 'unused'),
      {
        subAgents: [billing, support],
      },
    );
    await withEngine(backend, router, async (engine) => {
      const { result, events } = await runOnce(engine, 'refund please');
      expect(result.status).toBe('completed');
      expect(result.output).toBe('refund issued');
      expect(events.find((e) => e.author === 'billing')?.nodePath).toBe('router/billing');
      expect(router.model.requests[0]?.tools.map((t) => t.name)).toContain('transfer_to_agent');
      expect(router.model.calls).toBe(1);
      expect(support.model.calls).toBe(0);
    });
  });

  it('offers transfer to parent and peers only when the parent is an LlmAgent and not disallowed', () => {
    const child = new LlmAgent({ name: 'child', model: new ScriptedModel({ respond: () => 'x' }) });
    const peer = new LlmAgent({
      name: 'peer',
      model: new ScriptedModel({ respond: () => 'x' }),
      disallowTransferToParent: true,
    });
    const parent = new LlmAgent({
      name: 'parent',
      model: new ScriptedModel({ respond: () => 'x' }),
      subAgents: [child, peer],
    });
    expect(parent.transferTargets().map((a) => a.name)).toEqual(['child', 'peer']);
    expect(child.transferTargets().map((a) => a.name)).toEqual(['parent', 'peer']);
    expect(peer.transferTargets().map((a) => a.name)).toEqual(['child']);
    const inSeq = new LlmAgent({ name: 'in_seq', model: new ScriptedModel({ respond: () => 'x' }) });
    new SequentialAgent({ name: 'wf', subAgents: [inSeq] });
    expect(inSeq.transferTargets()).toEqual([]);
  });

  it('runs an AgentTool child in the same session and budget', async () => {
    const helper = scripted('helper', 'helped', { outputKey: 'helper_said' });
    const boss = scripted(
      'boss',
      (turn) =>
        turn.callIndex === 0 ? call('helper', { request: 'do it' }) : `boss got ${turn.state.helper_said}`,
      {
        tools: [new AgentTool({ agent: helper })],
      },
    );
    await withEngine(backend, boss, async (engine) => {
      const { result, events, sessionId } = await runOnce(engine);
      expect(result.status).toBe('completed');
      expect(result.output).toBe('boss got helped');
      expect(result.llmCalls).toBe(3);
      expect((await engine.getSession(sessionId)).state.helper_said).toBe('helped');
      const helperEvent = events.find((e) => e.author === 'helper');
      expect(helperEvent?.branch).toMatch(/^helper@/);
      const response = events
        .flatMap((e) => e.content?.parts ?? [])
        .find((p) => p.functionResponse?.name === 'helper');
      expect(response?.functionResponse?.response).toEqual({ result: 'helped' });
    });
  });

  it('short-circuits through callbacks', async () => {
    let toolRuns = 0;
    const tool = new FunctionTool({ name: 'lookup', description: 'd', execute: () => ++toolRuns });
    const skipAgent = scripted('skip_agent', 'never', {
      beforeAgentCallback: () => ({ role: 'model', parts: [{ text: 'from callback' }] }),
    });
    const modelSkip = scripted('model_skip', 'never', {
      beforeModelCallback: () => ({ content: { role: 'model', parts: [{ text: 'cached answer' }] } }),
    });
    const toolSkip = scripted('tool_skip', (turn) => (turn.callIndex === 0 ? call('lookup') : 'done'), {
      tools: [tool],
      beforeToolCallback: () => ({ stubbed: true }),
      afterAgentCallback: (ctx) => {
        ctx.state.set('after_ran', true);
      },
    });
    await withEngine(
      backend,
      new SequentialAgent({ name: 's', subAgents: [skipAgent, modelSkip, toolSkip] }),
      async (engine) => {
        const { result, events, sessionId } = await runOnce(engine);
        expect(result.status).toBe('completed');
        expect(skipAgent.model.calls).toBe(0);
        expect(modelSkip.model.calls).toBe(0);
        expect(
          events.some((e) => e.author === 'skip_agent' && e.content?.parts[0]?.text === 'from callback'),
        ).toBe(true);
        expect(
          events.some((e) => e.author === 'model_skip' && e.content?.parts[0]?.text === 'cached answer'),
        ).toBe(true);
        expect(toolRuns).toBe(0);
        const response = events
          .flatMap((e) => e.content?.parts ?? [])
          .find((p) => p.functionResponse?.name === 'lookup');
        expect(response?.functionResponse?.response).toEqual({ stubbed: true });
        expect((await engine.getSession(sessionId)).state.after_ran).toBe(true);
      },
    );
  });

  it('returns tool errors and invalid arguments to the model as {error}', async () => {
    const strict = new FunctionTool({
      name: 'strict',
      description: 'd',
      parameters: z.object({ n: z.number() }),
      execute: ({ n }) => {
        if (n < 0) throw new Error('negative');
        return { n };
      },
    });
    const agent = scripted(
      'a',
      (turn) =>
        [call('strict', { n: 'x' }), call('strict', { n: -1 }), call('nope'), 'done'][
          turn.callIndex
        ] as never,
      { tools: [strict] },
    );
    await withEngine(backend, agent, async (engine) => {
      const { result, events } = await runOnce(engine);
      expect(result.status).toBe('completed');
      const errors = events
        .flatMap((e) => e.content?.parts ?? [])
        .flatMap((p) => (p.functionResponse ? [String(p.functionResponse.response.error)] : []));
      expect(errors[0]).toMatch(/invalid arguments for tool "strict": n:/);
      expect(errors[1]).toBe('negative');
      expect(errors[2]).toMatch(/tool "nope" is not available/);
    });
  });

  it('fails with MAX_ITERATIONS after maxIterations rounds', async () => {
    const noop = new FunctionTool({ name: 'noop', description: 'd', execute: () => ({}) });
    const agent = scripted('looper', call('noop'), { tools: [noop], maxIterations: 3 });
    await withEngine(backend, agent, async (engine) => {
      const { result, events } = await runOnce(engine);
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('MAX_ITERATIONS');
      expect(agent.model.calls).toBe(3);
      expect(events.filter((e) => e.errorCode === 'MAX_ITERATIONS')).toHaveLength(1);
    });
  });

  it('fails with LLM_CALL_BUDGET_EXCEEDED, counting calls across a resume', async () => {
    const approve = new FunctionTool({
      name: 'approve_me',
      description: 'd',
      requireConfirmation: true,
      execute: () => ({ ok: true }),
    });
    const agent = scripted(
      'spender',
      (turn) => (turn.callIndex === 0 ? call('approve_me') : call('approve_me')),
      { tools: [approve] },
    );
    await withEngine(backend, agent, async (engine) => {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'x', maxLlmCalls: 2 });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      expect(paused.llmCalls).toBe(1);
      await engine.confirm(paused.pending[0]!.callId, { confirmed: true });
      const second = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(second.status).toBe('paused');
      expect(second.llmCalls).toBe(2);
      await engine.confirm(second.pending[0]!.callId, { confirmed: true });
      const final = await waitFor(async () => {
        const v = await engine.get(invocationId);
        return v.status === 'failed' ? v : undefined;
      });
      expect(final.error?.code).toBe('LLM_CALL_BUDGET_EXCEEDED');
      expect(agent.model.calls).toBe(2);
    });
  });

  it('ends the whole invocation at the next step boundary on endInvocation', async () => {
    const stop = new FunctionTool({
      name: 'stop_all',
      description: 'd',
      execute: (_a, ctx) => {
        ctx.endInvocation();
        return { stopped: true };
      },
    });
    const first = scripted('first', (turn) => (turn.callIndex === 0 ? call('stop_all') : 'stopped here'), {
      tools: [stop],
    });
    const never = scripted('never', 'x');
    await withEngine(
      backend,
      new SequentialAgent({ name: 's', subAgents: [first, never] }),
      async (engine) => {
        const { result } = await runOnce(engine);
        expect(result.status).toBe('completed');
        expect(result.output).toBe('stopped here');
        expect(never.model.calls).toBe(0);
      },
    );
  });

  it('cancels an invocation: in-flight tool calls see the signal and nothing runs after', async () => {
    let sawAbort = false;
    const slow = new FunctionTool({
      name: 'slow',
      description: 'd',
      execute: (_a, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            resolve({ aborted: true });
          });
        }),
    });
    const agent = scripted('a', call('slow'), { tools: [slow] });
    const after = scripted('after', 'x');
    await withEngine(
      backend,
      new SequentialAgent({ name: 's', subAgents: [agent, after] }),
      async (engine) => {
        const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'x' });
        await waitFor(() => agent.model.calls === 1);
        const cancelled = await engine.cancel(invocationId);
        expect(cancelled.status).toBe('cancelled');
        await waitFor(() => sawAbort);
        expect((await engine.wait(invocationId)).status).toBe('cancelled');
        expect(after.model.calls).toBe(0);
      },
    );
  });
});
