/**
 * Plugins (ADK's BasePlugin) on real runs of one engine on PostgreSQL: plugins run in registration order before the
 * agent's own callbacks, a returned value short-circuits the rest (the agent's callbacks too) and is stored as the
 * model's or the tool's answer, changes made in place pass down the chain, each of the twelve callbacks is called
 * (afterRunCallback once, after the commit, also when a worker's sweep finds a run end nobody handled), a plugin
 * that throws fails its step and the step runs again, and the shipped plugins (logging, global instruction, reflect
 * and retry) do what ADK's do. The PluginManager's own tests, ported from adk-js: test/unit/plugin-manager.test.ts.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  AgentloomError,
  BasePlugin,
  FunctionTool,
  GlobalInstructionPlugin,
  LlmAgent,
  LoggingPlugin,
  REFLECT_AND_RETRY_RESPONSE_TYPE,
  ReflectAndRetryToolPlugin,
  ScriptedModel,
  type AppDefinition,
  type CallbackContext,
  type Content,
  type Engine,
  type Event,
  type ModelRequest,
  type ModelResponse,
  type PluginCallbackName,
  type PluginInvocationContext,
  type RunOutcome,
  type Tool,
  type ToolCallbackParams,
  type ToolContext,
} from '../../src/index.js';
import { claimRunEnd } from '../../src/store/repos/invocations.js';
import { waitFor } from '../support/assert/wait-for.js';
import { backends, engineOn } from '../support/services/engines.js';

const postgres = backends.find((b) => b.name === 'postgres')!;

/** One call of a callback: who made it, in which run (the app's name before a run exists), and what about. */
interface Call {
  who: string;
  cb: PluginCallbackName;
  run: string;
  about?: string;
}
const calls: Call[] = [];
const callsOf = (run: string, who?: string): Call[] =>
  calls.filter((c) => c.run === run && (who === undefined || c.who === who));

/** Records every callback; answers where a test asks it to (by agent or tool name). */
class Recorder extends BasePlugin {
  constructor(
    name: string,
    private readonly answers: {
      model?: Record<string, ModelResponse>;
      tool?: Record<string, Record<string, unknown>>;
      run?: Record<string, Content>;
    } = {},
  ) {
    super(name);
  }
  private note(cb: PluginCallbackName, run: string, about?: string): void {
    calls.push({ who: this.name, cb, run, ...(about === undefined ? {} : { about }) });
  }
  override onUserMessageCallback(p: { invocationContext: PluginInvocationContext; userMessage: Content }) {
    this.note('onUserMessageCallback', p.invocationContext.appName);
    return undefined;
  }
  override beforeRunCallback(p: { invocationContext: PluginInvocationContext }) {
    this.note('beforeRunCallback', p.invocationContext.invocationId);
    return this.answers.run?.[p.invocationContext.appName];
  }
  override afterRunCallback(p: { invocationContext: PluginInvocationContext; outcome: RunOutcome }) {
    this.note('afterRunCallback', p.invocationContext.invocationId, p.outcome.status);
  }
  override onEventCallback(p: { invocationContext: PluginInvocationContext; event: Event }) {
    this.note('onEventCallback', p.invocationContext.invocationId, String(p.event.seq));
    return undefined;
  }
  override beforeAgentCallback(p: { agent: { name: string }; callbackContext: CallbackContext }) {
    this.note('beforeAgentCallback', p.callbackContext.invocationId, p.agent.name);
    return undefined;
  }
  override afterAgentCallback(p: { agent: { name: string }; callbackContext: CallbackContext }) {
    this.note('afterAgentCallback', p.callbackContext.invocationId, p.agent.name);
    return undefined;
  }
  override beforeModelCallback(p: { callbackContext: CallbackContext; llmRequest: ModelRequest }) {
    this.note('beforeModelCallback', p.callbackContext.invocationId, p.callbackContext.agentName);
    return this.answers.model?.[p.callbackContext.agentName];
  }
  override afterModelCallback(p: { callbackContext: CallbackContext; llmResponse: ModelResponse }) {
    this.note('afterModelCallback', p.callbackContext.invocationId, p.callbackContext.agentName);
    return undefined;
  }
  override onModelErrorCallback(p: {
    callbackContext: CallbackContext;
    llmRequest: ModelRequest;
    error: Error;
  }): ModelResponse | undefined {
    this.note('onModelErrorCallback', p.callbackContext.invocationId, p.error.message);
    return p.error.message === 'provider down'
      ? { content: { role: 'model', parts: [{ text: 'recovered' }] } }
      : undefined;
  }
  override beforeToolCallback(p: ToolCallbackParams) {
    this.note('beforeToolCallback', p.toolContext.invocationId, p.tool.name);
    // Changed in place: what the agent's callbacks and the tool see next.
    if (this.name === 'second' && p.tool.name === 'lookup' && p.toolArgs.q === 'original')
      p.toolArgs.q = 'changed';
    return this.answers.tool?.[p.tool.name];
  }
  override afterToolCallback(p: ToolCallbackParams & { result: Record<string, unknown> }) {
    this.note('afterToolCallback', p.toolContext.invocationId, p.tool.name);
    return undefined;
  }
  override onToolErrorCallback(p: ToolCallbackParams & { error: Error }) {
    this.note('onToolErrorCallback', p.toolContext.invocationId, p.tool.name);
    return undefined;
  }
}

/** Throws in beforeModelCallback for agent `fragile` while `armed` (once). */
class Thrower extends BasePlugin {
  armed = false;
  constructor() {
    super('thrower');
  }
  override beforeModelCallback(p: { callbackContext: CallbackContext }): undefined {
    if (p.callbackContext.agentName !== 'fragile' || !this.armed) return undefined;
    this.armed = false;
    throw new Error('policy service unreachable');
  }
}

const lookups: unknown[] = [];
const lookup = new FunctionTool({
  name: 'lookup',
  description: 'Looks something up.',
  parameters: z.object({ q: z.string() }),
  execute: async ({ q }) => {
    lookups.push(q);
    return { found: q };
  },
});
let deletes = 0;
const deleteAll = new FunctionTool({
  name: 'delete_all',
  description: 'Deletes everything.',
  execute: async () => ({ deleted: ++deletes }),
});
const flaky = new FunctionTool({
  name: 'flaky',
  description: 'Always fails.',
  execute: () => Promise.reject(new Error('backend timeout')),
});

/** The agent's own callbacks: recorded under `agent`, after the plugins'. */
const own = (cb: PluginCallbackName) => (c: CallbackContext) =>
  void calls.push({ who: 'agent', cb, run: c.invocationId });
const ownCallbacks = () => ({
  beforeAgentCallback: own('beforeAgentCallback'),
  afterAgentCallback: own('afterAgentCallback'),
  beforeModelCallback: own('beforeModelCallback'),
  afterModelCallback: own('afterModelCallback'),
  beforeToolCallback: (_t: Tool, args: Record<string, unknown>, c: ToolContext) =>
    void calls.push({
      who: 'agent',
      cb: 'beforeToolCallback',
      run: c.invocationId,
      about: JSON.stringify(args),
    }),
  afterToolCallback: (_t: Tool, _a: Record<string, unknown>, c: ToolContext) =>
    void calls.push({ who: 'agent', cb: 'afterToolCallback', run: c.invocationId }),
});

const systemInstructions: string[] = [];
let shortyModelCalls = 0;
const callsTool = (tool: string, args: Record<string, unknown> = {}, rounds = 1) =>
  new ScriptedModel({
    respond: (turn) => {
      systemInstructions.push(`${turn.agentName}: ${turn.systemInstruction}`);
      return turn.callIndex < rounds ? { functionCalls: [{ name: tool, args }] } : 'done';
    },
  });

const apps: AppDefinition[] = [
  {
    name: 'order',
    agent: new LlmAgent({
      name: 'orderly',
      tools: [lookup],
      model: callsTool('lookup', { q: 'original' }),
      ...ownCallbacks(),
    }),
  },
  {
    name: 'short',
    agent: new LlmAgent({
      name: 'shorty',
      tools: [deleteAll],
      model: new ScriptedModel({
        respond: () => {
          shortyModelCalls++;
          return 'from the model';
        },
      }),
      ...ownCallbacks(),
    }),
  },
  {
    name: 'guarded',
    agent: new LlmAgent({
      name: 'guarded',
      tools: [deleteAll],
      model: callsTool('delete_all'),
      ...ownCallbacks(),
    }),
  },
  {
    name: 'every',
    agent: new LlmAgent({
      name: 'everyone',
      tools: [flaky],
      model: new ScriptedModel({
        respond: (turn) => {
          if (turn.callIndex === 0) return { functionCalls: [{ name: 'flaky', args: {} }] };
          throw new AgentloomError('MODEL_ERROR', 'provider down');
        },
      }),
    }),
  },
  {
    name: 'reflect',
    agent: new LlmAgent({ name: 'reflector', tools: [flaky], model: callsTool('flaky', {}, 4) }),
  },
  { name: 'fragile', agent: new LlmAgent({ name: 'fragile', model: callsTool('none', {}, 0) }) },
  { name: 'gate', agent: new LlmAgent({ name: 'gated', model: callsTool('none', {}, 0) }) },
  { name: 'swept', agent: new LlmAgent({ name: 'sweeper', model: callsTool('none', {}, 0) }) },
  {
    name: 'waits',
    agent: new LlmAgent({
      name: 'waiter',
      tools: [
        new FunctionTool({
          name: 'publish',
          description: 'Publishes.',
          requireConfirmation: true,
          execute: async () => ({}),
        }),
      ],
      model: callsTool('publish'),
    }),
  },
];

const lines: Record<string, unknown>[] = [];
const logger = pino(
  { level: 'debug' },
  { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
);
const thrower = new Thrower();
/** Set to crash the next run's end between its commit and its claim, as a worker SIGKILLed there would. */
let crashRunEnd = false;
let engine: Engine;

beforeAll(async () => {
  engine = await engineOn(postgres, {
    apps,
    logger,
    faults: (point) => {
      if (point !== 'before-run-end-claim' || !crashRunEnd) return;
      crashRunEnd = false;
      throw Object.assign(new Error('simulated crash before the run end was claimed'), { crash: true });
    },
    plugins: [
      new Recorder('first', {
        model: { shorty: { content: { role: 'model', parts: [{ text: 'from the plugin' }] } } },
        tool: { delete_all: { error: 'delete_all is blocked by policy' } },
        run: { gate: { role: 'model', parts: [{ text: 'closed for maintenance' }] } },
      }),
      new Recorder('second'),
      thrower,
      new GlobalInstructionPlugin({ globalInstruction: 'GLOBAL RULE: be brief.' }),
      new ReflectAndRetryToolPlugin({ maxRetries: 2 }),
      new LoggingPlugin(),
    ],
  });
});

afterAll(async () => {
  await engine?.close();
});

async function run(app: string): Promise<{ id: string; status: string; output: string | null | undefined }> {
  const { invocationId } = await engine.enqueue({ app, userId: 'u', input: 'go' });
  const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
  return { id: invocationId, status: done.status, output: done.output };
}

const toolResponses = async (id: string): Promise<Record<string, unknown>[]> =>
  (await engine.getSession((await engine.get(id)).sessionId)).events.flatMap((e) =>
    (e.content?.parts ?? []).flatMap((p) => (p.functionResponse ? [p.functionResponse.response] : [])),
  ) as Record<string, unknown>[];

describe('plugins on runs', () => {
  it('runs plugins in registration order, before the agent callbacks; changes to arguments pass down', async () => {
    const r = await run('order');
    expect(r.status).toBe('completed');
    const seen = (cb: PluginCallbackName) =>
      callsOf(r.id)
        .filter((c) => c.cb === cb)
        .map((c) => c.who);
    for (const cb of [
      'beforeAgentCallback',
      'afterAgentCallback',
      'beforeToolCallback',
      'afterToolCallback',
    ] as const) {
      expect(seen(cb), cb).toEqual(['first', 'second', 'agent']);
    }
    // Two model calls (the tool call, then the answer): each asks first, second, then the agent.
    expect(seen('beforeModelCallback')).toEqual(['first', 'second', 'agent', 'first', 'second', 'agent']);
    expect(seen('afterModelCallback')).toEqual(['first', 'second', 'agent', 'first', 'second', 'agent']);
    // The second plugin changed the arguments in place: the agent's callback and the tool saw the change.
    expect(callsOf(r.id, 'agent').find((c) => c.cb === 'beforeToolCallback')?.about).toBe('{"q":"changed"}');
    expect(lookups).toEqual(['changed']);
    // The global instruction came first in every system instruction the model got.
    expect(systemInstructions.filter((s) => s.startsWith('orderly:'))).toEqual([
      'orderly: GLOBAL RULE: be brief.',
      'orderly: GLOBAL RULE: be brief.',
    ]);
  });

  it("short-circuits: a plugin's model answer replaces the call (no later plugin nor the agent asked) and is stored", async () => {
    const r = await run('short');
    expect(r).toMatchObject({ status: 'completed', output: 'from the plugin' });
    expect(shortyModelCalls).toBe(0);
    const before = callsOf(r.id)
      .filter((c) => c.cb === 'beforeModelCallback')
      .map((c) => c.who);
    expect(before).toEqual(['first']);
    // The after-model chain still sees the answer, as it would the model's.
    expect(
      callsOf(r.id)
        .filter((c) => c.cb === 'afterModelCallback')
        .map((c) => c.who),
    ).toEqual(['first', 'second', 'agent']);
    const session = await engine.getSession((await engine.get(r.id)).sessionId);
    expect(session.events.filter((e) => e.author === 'shorty').map((e) => e.content?.parts[0]?.text)).toEqual(
      ['from the plugin'],
    );
  });

  it("short-circuits a tool: the plugin's answer is the tool's response; the tool and the agent's callback are not run", async () => {
    const r = await run('guarded');
    expect(r.status).toBe('completed');
    expect(deletes).toBe(0);
    expect(await toolResponses(r.id)).toEqual([{ error: 'delete_all is blocked by policy' }]);
    expect(
      callsOf(r.id)
        .filter((c) => c.cb === 'beforeToolCallback')
        .map((c) => c.who),
    ).toEqual(['first']);
  });

  it('calls every callback of a run: user message, run, agent, model (and its error), tool (and its error), events', async () => {
    const r = await run('every');
    expect(r).toMatchObject({ status: 'completed', output: 'recovered' });
    const mine = callsOf(r.id, 'first');
    const cbs = new Set(mine.map((c) => c.cb));
    expect(calls.some((c) => c.run === 'every' && c.cb === 'onUserMessageCallback')).toBe(true);
    for (const cb of [
      'beforeRunCallback',
      'beforeAgentCallback',
      'beforeModelCallback',
      'afterModelCallback',
      'beforeToolCallback',
      'onToolErrorCallback',
      'afterToolCallback',
      'onModelErrorCallback',
      'afterAgentCallback',
      'onEventCallback',
    ] as const) {
      expect(cbs.has(cb), cb).toBe(true);
    }
    // afterRunCallback once, after the commit that ended the run.
    await waitFor(() => callsOf(r.id, 'first').some((c) => c.cb === 'afterRunCallback'), {
      what: 'afterRunCallback',
    });
    expect(callsOf(r.id, 'first').filter((c) => c.cb === 'afterRunCallback')).toEqual([
      { who: 'first', cb: 'afterRunCallback', run: r.id, about: 'completed' },
    ]);
    expect(callsOf(r.id, 'first').filter((c) => c.cb === 'beforeRunCallback')).toHaveLength(1);
    // onEventCallback once per event the run's steps stored, in order.
    const stored: string[] = [];
    for await (const e of engine.events(r.id)) if (e.author !== 'user') stored.push(String(e.seq));
    expect(mine.filter((c) => c.cb === 'onEventCallback').map((c) => c.about)).toEqual(stored);
  });

  it('reflect and retry: a failing tool is answered with a reflection up to maxRetries, then the error passes', async () => {
    const r = await run('reflect');
    expect(r.status).toBe('completed');
    const responses = await toolResponses(r.id);
    expect(responses.map((x) => x.response_type ?? x.error)).toEqual([
      REFLECT_AND_RETRY_RESPONSE_TYPE,
      REFLECT_AND_RETRY_RESPONSE_TYPE,
      'backend timeout',
      'backend timeout',
    ]);
    expect(responses[1]).toMatchObject({ retry_count: 2, error_details: 'backend timeout' });
    expect(String(responses[0]?.reflection_guidance)).toContain('retry attempt 1 of 2');
  });

  it('a plugin that throws fails its step naming the plugin and the callback; the step runs again', async () => {
    thrower.armed = true;
    const r = await run('fragile');
    expect(r.status).toBe('completed');
    const failure = lines.find((l) =>
      (l.err as { message?: string } | undefined)?.message?.includes('plugin "thrower"'),
    );
    // pino's serializer appends the cause's message.
    expect((failure?.err as { message: string }).message).toMatch(
      /^plugin "thrower" failed in beforeModelCallback: policy service unreachable/,
    );
    const [node] = await engine.nodes(r.id);
    expect(node?.attempt).toBe(2);
  });

  it('beforeRunCallback: an answer ends the run with it, before any model call; asked once', async () => {
    const r = await run('gate');
    expect(r).toMatchObject({ status: 'completed', output: 'closed for maintenance' });
    expect(systemInstructions.some((s) => s.startsWith('gated:'))).toBe(false);
    expect(
      callsOf(r.id)
        .filter((c) => c.cb === 'beforeRunCallback')
        .map((c) => c.who),
    ).toEqual(['first']);
  });

  it('afterRunCallback once when a run is cancelled', async () => {
    const r = await run('waits');
    expect(r.status).toBe('paused');
    await engine.cancel(r.id);
    await waitFor(() => callsOf(r.id).some((c) => c.cb === 'afterRunCallback'), { what: 'afterRunCallback' });
    expect(
      callsOf(r.id)
        .filter((c) => c.cb === 'afterRunCallback')
        .map((c) => [c.who, c.about]),
    ).toEqual([
      ['first', 'cancelled'],
      ['second', 'cancelled'],
    ]);
  });

  it("a run whose end nobody claimed (its worker died after the commit) is handled once by a worker's sweep", async () => {
    crashRunEnd = true;
    const r = await run('swept');
    expect(r.status).toBe('completed');
    await waitFor(() => !crashRunEnd, { what: 'the simulated crash' });
    expect(callsOf(r.id).filter((c) => c.cb === 'afterRunCallback')).toEqual([]);
    await engine.reconcile();
    await engine.reconcile();
    expect(
      callsOf(r.id)
        .filter((c) => c.cb === 'afterRunCallback')
        .map((c) => c.who),
    ).toEqual(['first', 'second']);
    // Handled: another process's claim of this end finds nothing to do.
    expect(await claimRunEnd(engine.store.db, r.id, ['swept'])).toBeUndefined();
  });

  it("LoggingPlugin logs through the engine's logger, prompts and arguments not at info", () => {
    const modelLine = lines.find(
      (l) => l.plugin === 'logging_plugin' && l.msg === 'model call' && l.agent === 'orderly',
    );
    expect(modelLine).toMatchObject({ level: 30, tools: ['lookup'] });
    expect(JSON.stringify(modelLine)).not.toContain('GLOBAL RULE');
    const args = lines.find((l) => l.plugin === 'logging_plugin' && l.msg === 'tool call arguments');
    expect(args?.level).toBe(20);
    expect(lines.some((l) => l.plugin === 'logging_plugin' && l.msg === 'run ended')).toBe(true);
  });
});
