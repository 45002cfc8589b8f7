/**
 * Conformance to Google ADK where a user porting an ADK app would notice (docs/semantics-additions.md):
 * branch visibility across parallel stages, AgentTool output schemas, callbacks that run once and in chains,
 * outputKey and the LLM-call budget around callback answers, tool responses in call order, long-running call ids
 * on the model event, templating, and the next message going to the agent that took the conversation over. Run
 * by the real engine on PGlite and on PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  AgentloomError,
  AgentTool,
  FunctionTool,
  LlmAgent,
  ParallelAgent,
  ScriptedModel,
  SequentialAgent,
  textOf,
  type BaseAgent,
  type Engine,
  type EnqueueInput,
  type Event,
} from '../../src/index.js';
import { call, scripted, seenText } from '../fixtures/agents.js';
import { backends, engineOn, type Backend } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

/** The engine of the running test, for tools that wait on what other branches stored. */
interface EngineRef {
  current?: Engine;
}

async function storedEvents(engine: Engine, invocationId: string): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of engine.events(invocationId)) events.push(e);
  return events;
}

const said = (events: Event[], author: string) =>
  events.some((e) => e.author === author && textOf(e.content) !== undefined);

const answered = (events: Event[], tool: string) =>
  events.some((e) => e.content?.parts.some((p) => p.functionResponse?.name === tool));

/** A tool that returns once `until` holds for the invocation's stored events. */
function waitTool(name: string, ref: EngineRef, until: (events: Event[]) => boolean): FunctionTool {
  return new FunctionTool({
    name,
    description: 'waits for other branches',
    execute: async (_args, ctx) => {
      await waitFor(async () => until(await storedEvents(ref.current as Engine, ctx.invocationId)), {
        what: name,
      });
      return { waited: true };
    },
  });
}

/** An agent that first waits (tool `wait_<name>`) until the given agents have spoken, then answers. */
function patientReader(name: string, ref: EngineRef, others: string[]) {
  const wait = waitTool(`wait_${name}`, ref, (events) => others.every((o) => said(events, o)));
  return scripted(name, (turn) => (turn.callIndex === 0 ? call(`wait_${name}`) : `${name} done`), {
    tools: [wait],
  });
}

async function withEngine<T>(
  backend: Backend,
  agent: BaseAgent,
  fn: (engine: Engine) => Promise<T>,
  ref: EngineRef = {},
): Promise<T> {
  const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
  ref.current = engine;
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

async function runOnce(engine: Engine, input = 'go', extra: Partial<EnqueueInput> = {}) {
  const { invocationId, sessionId } = await engine.enqueue({ app: 'app', userId: 'u1', input, ...extra });
  const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
  return { invocationId, sessionId, result, events: await storedEvents(engine, invocationId) };
}

describe.each(backends)('ADK conformance on $name', (backend) => {
  it('shows a parallel stage the lanes of the stage before it, never its own sibling lanes', async () => {
    const ref: EngineRef = {};
    const reader = patientReader('stage2_c', ref, ['stage2_d']);
    const sibling = scripted('stage2_d', 'delta notes');
    const root = new SequentialAgent({
      name: 'stages',
      subAgents: [
        new ParallelAgent({
          name: 'stage1',
          subAgents: [scripted('stage1_a', 'alpha notes'), scripted('stage1_b', 'beta notes')],
        }),
        new ParallelAgent({ name: 'stage2', subAgents: [reader, sibling] }),
      ],
    });
    await withEngine(
      backend,
      root,
      async (engine) => {
        const { result } = await runOnce(engine);
        expect(result.status).toBe('completed');
        // Read after its sibling answered (the wait tool), so invisibility is not a matter of timing.
        const seen = seenText(reader.model.requests[1] as never);
        expect(seen).toContain('[stage1_a] said: alpha notes');
        expect(seen).toContain('[stage1_b] said: beta notes');
        expect(seen).not.toContain('delta notes');
        expect(seenText(sibling.model.requests[0] as never)).toContain('alpha notes');
      },
      ref,
    );
  });

  it("shows a reducer the workers of its own fan-out inside a parallel branch, never the other branch's", async () => {
    const ref: EngineRef = {};
    const reducerA = patientReader('reducer_a', ref, ['worker_3', 'worker_4']);
    const reducerB = scripted('reducer_b', 'b reduced');
    const mapReduce = (name: string, workers: BaseAgent[], reducer: BaseAgent) =>
      new SequentialAgent({
        name,
        subAgents: [new ParallelAgent({ name: `${name}_fan`, subAgents: workers }), reducer],
      });
    const root = new ParallelAgent({
      name: 'maps',
      subAgents: [
        mapReduce('map_a', [scripted('worker_1', 'one found'), scripted('worker_2', 'two found')], reducerA),
        mapReduce(
          'map_b',
          [scripted('worker_3', 'three found'), scripted('worker_4', 'four found')],
          reducerB,
        ),
      ],
    });
    await withEngine(
      backend,
      root,
      async (engine) => {
        const { result } = await runOnce(engine);
        expect(result.status).toBe('completed');
        const seenA = seenText(reducerA.model.requests[1] as never);
        expect(seenA).toContain('one found');
        expect(seenA).toContain('two found');
        expect(seenA).not.toContain('three found');
        expect(seenA).not.toContain('four found');
        const seenB = seenText(reducerB.model.requests[0] as never);
        expect(seenB).toContain('three found');
        expect(seenB).toContain('four found');
      },
      ref,
    );
  });

  it("shows each parallel stage inside a parallel branch the earlier stages of its branch, never a sibling branch's", async () => {
    const ref: EngineRef = {};
    const leftReader = patientReader('left_2', ref, ['right_1a', 'right_1b']);
    const rightReader = patientReader('right_2', ref, ['left_1a', 'left_1b']);
    const line = (side: string, reader: BaseAgent) =>
      new SequentialAgent({
        name: side,
        subAgents: [
          new ParallelAgent({
            name: `${side}_stage1`,
            subAgents: [scripted(`${side}_1a`, `${side} first`), scripted(`${side}_1b`, `${side} second`)],
          }),
          new ParallelAgent({ name: `${side}_stage2`, subAgents: [reader] }),
        ],
      });
    const root = new ParallelAgent({
      name: 'lines',
      subAgents: [line('left', leftReader), line('right', rightReader)],
    });
    await withEngine(
      backend,
      root,
      async (engine) => {
        const { result, events } = await runOnce(engine);
        expect(result.status).toBe('completed');
        expect(events.find((e) => e.author === 'left_2' && e.content)?.branch).toBe('lines.0.left_stage2.0');
        const left = seenText(leftReader.model.requests[1] as never);
        expect(left).toContain('left first');
        expect(left).toContain('left second');
        expect(left).not.toMatch(/right (first|second)/);
        const right = seenText(rightReader.model.requests[1] as never);
        expect(right).toContain('right first');
        expect(right).toContain('right second');
        expect(right).not.toMatch(/left (first|second)/);
      },
      ref,
    );
  });

  it('returns the validated object of an AgentTool whose agent has an outputSchema, and stores it under outputKey', async () => {
    const rater = scripted('rater', '{"score": 4, "label": "good", "extra": "dropped"}', {
      outputSchema: z.object({ score: z.number(), label: z.string() }),
      outputKey: 'rating',
    });
    const boss = scripted(
      'boss',
      (turn) => (turn.callIndex === 0 ? call('rater', { request: 'rate it' }) : 'rated'),
      { tools: [new AgentTool({ agent: rater })] },
    );
    await withEngine(backend, boss, async (engine) => {
      const { result, events, sessionId } = await runOnce(engine);
      expect(result.status).toBe('completed');
      const response = events
        .flatMap((e) => e.content?.parts ?? [])
        .find((p) => p.functionResponse?.name === 'rater');
      expect(response?.functionResponse?.response).toEqual({ score: 4, label: 'good' });
      expect((await engine.getSession(sessionId)).state.rating).toEqual({ score: 4, label: 'good' });
      const sent = boss.model.requests[1]?.contents
        .flatMap((c) => c.parts)
        .find((p) => p.functionResponse?.name === 'rater');
      expect(sent?.functionResponse?.response).toEqual({ score: 4, label: 'good' });
    });
  });

  it('runs tool callbacks once per call across re-runs after a child ends, a child pauses and a confirmation', async () => {
    const sign = new FunctionTool({
      name: 'sign',
      description: 'signs',
      requireConfirmation: true,
      execute: () => ({ signed: true }),
    });
    const helper = scripted('helper', (turn) => (turn.callIndex === 0 ? call('sign') : 'helper signed'), {
      tools: [sign],
    });
    const approve = new FunctionTool({
      name: 'approve',
      description: 'approves',
      requireConfirmation: true,
      execute: () => ({ approved: true }),
    });
    const before: string[] = [];
    const after: string[] = [];
    const boss = scripted(
      'boss',
      (turn) =>
        [call('helper', { request: 'sign it' }), call('approve'), 'all done'][turn.callIndex] as never,
      {
        tools: [new AgentTool({ agent: helper }), approve],
        beforeToolCallback: (tool, _args, ctx) => {
          before.push(tool.name);
          ctx.state.set(`checked_${tool.name}`, true);
        },
        afterToolCallback: (tool) => {
          after.push(tool.name);
        },
      },
    );
    await withEngine(backend, boss, async (engine) => {
      const { invocationId, sessionId } = await engine.enqueue({ app: 'app', userId: 'u1', input: 'go' });
      const childPaused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(childPaused.status).toBe('paused');
      expect(childPaused.pending[0]?.name).toBe('sign');
      await engine.confirm(childPaused.pending[0]!.callId, { confirmed: true });
      const bossPaused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(bossPaused.status).toBe('paused');
      expect(bossPaused.pending[0]?.name).toBe('approve');
      await engine.confirm(bossPaused.pending[0]!.callId, { confirmed: true });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('all done');
      expect(before).toEqual(['helper', 'approve']);
      expect(after).toEqual(['helper', 'approve']);
      // What the callback wrote before the calls were handed on is kept.
      expect((await engine.getSession(sessionId)).state).toMatchObject({
        checked_helper: true,
        checked_approve: true,
      });
    });
  });

  it("stores a beforeAgentCallback answer under outputKey as the agent's final response", async () => {
    const greeter = scripted('greeter', 'never', {
      outputKey: 'greeting',
      beforeAgentCallback: () => ({ role: 'model', parts: [{ text: 'cached hello' }] }),
    });
    const next = scripted('next', (turn) => `next saw: ${turn.systemInstruction}`, {
      instruction: 'Repeat {greeting}',
    });
    await withEngine(
      backend,
      new SequentialAgent({ name: 'pipe', subAgents: [greeter, next] }),
      async (engine) => {
        const { result, sessionId } = await runOnce(engine);
        expect(result.status).toBe('completed');
        expect(greeter.model.calls).toBe(0);
        expect((await engine.getSession(sessionId)).state.greeting).toBe('cached hello');
        expect(result.output).toBe('next saw: Repeat cached hello');
      },
    );
  });

  it('does not count a beforeModelCallback answer as an LLM call', async () => {
    const cached = scripted('cached', 'never', {
      beforeModelCallback: () => ({ content: { role: 'model', parts: [{ text: 'from cache' }] } }),
    });
    const real = scripted('real', 'from the model');
    await withEngine(
      backend,
      new SequentialAgent({ name: 'pipe', subAgents: [cached, real] }),
      async (engine) => {
        const { result } = await runOnce(engine, 'go', { maxLlmCalls: 1 });
        expect(result.status).toBe('completed');
        expect(result.output).toBe('from the model');
        expect(result.llmCalls).toBe(1);
        expect(cached.model.calls).toBe(0);
      },
    );
  });

  it('sends function responses to the model in the order of the calls, however they finish', async () => {
    const ref: EngineRef = {};
    const fast = new FunctionTool({ name: 'fast', description: 'd', execute: () => ({ fast: true }) });
    const slow = waitTool('slow', ref, (events) => answered(events, 'fast'));
    const agent = scripted(
      'caller',
      (turn) =>
        turn.callIndex === 0 ? { functionCalls: [{ name: 'slow' }, { name: 'fast' }] } : 'both done',
      { tools: [slow, fast] },
    );
    await withEngine(
      backend,
      agent,
      async (engine) => {
        const { result, events } = await runOnce(engine);
        expect(result.status).toBe('completed');
        // Stored as they finished: fast first.
        const stored = events.flatMap((e) => e.content?.parts ?? []).flatMap((p) => p.functionResponse ?? []);
        expect(stored.map((r) => r.name)).toEqual(['fast', 'slow']);
        // Sent in the order of the calls, right after them.
        const contents = agent.model.requests[1]?.contents ?? [];
        expect(contents.at(-2)?.parts.map((p) => p.functionCall?.name)).toEqual(['slow', 'fast']);
        expect(contents.at(-1)?.parts.map((p) => p.functionResponse?.name)).toEqual(['slow', 'fast']);
      },
      ref,
    );
  });

  it('lists a long-running call in longRunningToolIds of the model event that made it', async () => {
    const startJob = new FunctionTool({
      name: 'start_job',
      description: 'starts a job',
      isLongRunning: true,
      execute: () => ({ status: 'started' }),
    });
    const agent = scripted('runner', (turn) => (turn.callIndex === 0 ? call('start_job') : 'job finished'), {
      tools: [startJob],
    });
    await withEngine(backend, agent, async (engine) => {
      const { invocationId, result, events } = await runOnce(engine);
      expect(result.status).toBe('paused');
      const callId = result.pending[0]!.callId;
      const modelEvent = events.find((e) =>
        e.content?.parts.some((p) => p.functionCall?.name === 'start_job'),
      );
      expect(modelEvent?.content?.role).toBe('model');
      expect(modelEvent?.longRunningToolIds).toEqual([callId]);
      await engine.respond({
        functionResponses: [{ id: callId, name: 'start_job', response: { status: 'done' } }],
      });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('job finished');
    });
  });

  it('runs callback lists in order until one answers, and refuses a callback that is not a function at construction', async () => {
    const order: string[] = [];
    const agent = scripted('chained', 'from the model', {
      beforeModelCallback: [
        () => {
          order.push('first');
        },
        () => {
          order.push('second');
          return { content: { role: 'model', parts: [{ text: 'from the second' }] } };
        },
        () => {
          order.push('third');
          return { content: { role: 'model', parts: [{ text: 'from the third' }] } };
        },
      ],
      afterModelCallback: [
        () => {
          order.push('after');
        },
      ],
    });
    await withEngine(backend, agent, async (engine) => {
      const { result } = await runOnce(engine);
      expect(result.status).toBe('completed');
      expect(result.output).toBe('from the second');
      expect(order).toEqual(['first', 'second', 'after']);
      expect(agent.model.calls).toBe(0);
    });
    const model = new ScriptedModel({ respond: () => 'x' });
    for (const [option, value] of [
      ['beforeToolCallback', 'not a function'],
      ['afterModelCallback', [() => undefined, 42]],
    ] as const) {
      let thrown: unknown;
      try {
        new LlmAgent({ name: 'bad', model, [option]: value as never });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(AgentloomError);
      expect((thrown as AgentloomError).code).toBe('VALIDATION');
      expect((thrown as AgentloomError).message).toContain(option);
    }
  });

  it('renders {{name  } and { name } placeholders and leaves JSON and { } alone', async () => {
    const agent = scripted('templ', 'ok', {
      instruction: 'Echo {{customer_int  }, { customer_id }, {"a": 1} and { }.',
    });
    await withEngine(backend, agent, async (engine) => {
      const { result } = await runOnce(engine, 'go', {
        stateDelta: { customer_int: 30, customer_id: 'c-7' },
      });
      expect(result.status).toBe('completed');
      expect(agent.model.requests[0]?.systemInstruction).toBe('Echo 30, c-7, {"a": 1} and { }.');
    });
  });

  it('sends the next message of a session to the agent the conversation was transferred to; startAt root starts at the root', async () => {
    const billing = scripted('billing', (turn) => `billing turn ${turn.contents.length}`, {
      description: 'billing questions',
    });
    const router = scripted(
      'router',
      (turn) =>
        turn.contents.length === 1 ? call('transfer_to_agent', { agent_name: 'billing' }) : 'router here',
      { subAgents: [billing] },
    );
    await withEngine(backend, router, async (engine) => {
      const first = await runOnce(engine, 'refund please');
      expect(first.result.output).toMatch(/^billing turn/);
      expect(router.model.calls).toBe(1);
      const second = await runOnce(engine, 'and the invoice?', { sessionId: first.sessionId });
      expect(second.result.status).toBe('completed');
      expect(second.result.output).toMatch(/^billing turn/);
      expect(router.model.calls).toBe(1);
      expect(billing.model.calls).toBe(2);
      expect((await engine.nodes(second.invocationId)).map((n) => n.path)).toEqual(['billing']);
      // Billing keeps the conversation: it sees the earlier turns.
      expect(seenText(billing.model.requests[1] as never)).toContain('refund please');
      const third = await runOnce(engine, 'hello again', { sessionId: first.sessionId, startAt: 'root' });
      expect(third.result.output).toBe('router here');
      expect(router.model.calls).toBe(2);
      expect((await engine.nodes(third.invocationId))[0]?.path).toBe('router');
    });
  });

  it('sends the next message to the root when the agent that took over cannot transfer back up', async () => {
    const billing = scripted('billing', 'billing answer', { disallowTransferToParent: true });
    const router = scripted(
      'router',
      (turn) =>
        turn.contents.length === 1 ? call('transfer_to_agent', { agent_name: 'billing' }) : 'router here',
      { subAgents: [billing] },
    );
    await withEngine(backend, router, async (engine) => {
      const first = await runOnce(engine, 'refund please');
      expect(first.result.output).toBe('billing answer');
      const second = await runOnce(engine, 'and the invoice?', { sessionId: first.sessionId });
      expect(second.result.output).toBe('router here');
      expect(billing.model.calls).toBe(1);
      expect(router.model.calls).toBe(2);
    });
  });
});
