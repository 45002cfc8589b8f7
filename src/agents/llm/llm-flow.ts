/**
 * The LlmAgent loop (SEMANTICS §3), journaled: every model response and tool response is a stored event, so a
 * re-run activation (crash, stall, resume) walks its journal and continues where it stopped — a stored model
 * call is never made again, a stored tool response never re-executed.
 */
import * as z from 'zod';
import { functionCallsOf, textOf, type Content, type FunctionCall } from '../../core/content.js';
import { withDeadline } from '../../core/deadline.js';
import { AgentloomError, toStoredError } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import { newId } from '../../core/ids.js';
import { withMaxOutputTokens } from '../../models/budget/budget.js';
import type { ModelRequest, ModelResponse, ToolDeclaration } from '../../models/model.js';
import type { Tool } from '../../tools/tool.js';
import { FunctionTool } from '../../tools/function-tool.js';
import { isToolset } from '../../tools/toolset.js';
import { invocationContextOf } from '../base-agent.js';
import type { CallbackContext } from './callbacks.js';
import * as pipeline from '../../plugins/pipeline.js';
import {
  BudgetPaused,
  NodeSuspended,
  type LeafOutcome,
  type NodeRuntime,
  type PauseRequest,
} from '../context.js';
import { buildHistory } from './history.js';
import { renderInstruction } from './instructions.js';
import { Journal } from './journal.js';
import type { Instruction, LlmFlowAgent } from './llm-agent-options.js';
import { recordingState } from './state-accessor.js';
import { requestDigest } from './request-digest.js';
import { isControlFlow, resolveCall, type CallResult } from './tool-call.js';

/** Name of the built-in transfer tool. */
export const TRANSFER_TOOL = 'transfer_to_agent';

interface Flow {
  agent: LlmFlowAgent;
  rt: NodeRuntime;
  journal: Journal;
  tools: Map<string, Tool>;
  /** The callback stages around this activation: the engine's plugins, then the agent's own callbacks. */
  stages: pipeline.Stages;
}

function transferTool(agent: LlmFlowAgent): Tool | undefined {
  const targets = agent.transferTargets();
  if (targets.length === 0) return undefined;
  const names = targets.map((t) => t.name);
  return new FunctionTool({
    name: TRANSFER_TOOL,
    description: `Transfer the question to another agent when it is better suited to answer. Agents: ${targets
      .map((t) => `${t.name}${t.description ? ` (${t.description})` : ''}`)
      .join('; ')}`,
    parameters: z.object({ agent_name: z.string() }),
    execute: ({ agent_name }, ctx) => {
      if (!names.includes(agent_name))
        return { error: `cannot transfer to "${agent_name}"; choose one of: ${names.join(', ')}` };
      ctx.actions.transferToAgent = agent_name;
      return {};
    },
  });
}

/** The tools offered this activation: single tools, and each toolset's as it lists them now. */
async function toolsOf(agent: LlmFlowAgent, rt: NodeRuntime): Promise<Map<string, Tool>> {
  const tools = new Map<string, Tool>();
  const add = (tool: Tool, from: string) => {
    if (tools.has(tool.name)) {
      throw new AgentloomError(
        'CONFIG',
        `LlmAgent "${agent.name}": tool "${tool.name}" of ${from} has the name of another of its tools: give the toolset a prefix`,
        { details: { tool: tool.name } },
      );
    }
    tools.set(tool.name, tool);
  };
  for (const ref of agent.options.tools ?? []) {
    if (isToolset(ref)) {
      for (const tool of await rt.resolveToolset(ref)) add(tool, `toolset "${ref.name}"`);
    } else {
      const tool = rt.resolveTool(ref);
      add(tool, 'its tools');
    }
  }
  const transfer = transferTool(agent);
  if (transfer) tools.set(transfer.name, transfer);
  return tools;
}

function callbackContext(flow: Flow, delta: Record<string, unknown>): CallbackContext {
  return {
    agentName: flow.agent.name,
    invocationId: flow.rt.invocationId,
    state: recordingState(() => flow.rt.state(), delta),
    endInvocation: () => flow.rt.endInvocation(),
  };
}

async function renderOne(flow: Flow, instruction: Instruction | undefined): Promise<string> {
  if (instruction === undefined) return '';
  if (typeof instruction === 'function') return instruction(invocationContextOf(flow.agent, flow.rt));
  return renderInstruction(instruction, {
    state: flow.rt.state(),
    loadArtifactText: async (name) => {
      const artifact = await flow.rt.loadArtifact(name);
      return artifact ? new TextDecoder().decode(artifact.data) : undefined;
    },
  });
}

async function buildRequest(flow: Flow, callIndex: number): Promise<ModelRequest> {
  const { agent, rt } = flow;
  const root = agent.rootAgent;
  const global = 'options' in root ? (root as LlmFlowAgent).options.globalInstruction : undefined;
  const system = [
    await renderOne(flow, global),
    agent.options.staticInstruction ?? '',
    await renderOne(flow, rt.instructionOverride?.(agent.name) ?? agent.options.instruction),
  ]
    .filter((s) => s.length > 0)
    .join('\n\n');
  const schema = agent.options.outputSchema;
  const tools: ToolDeclaration[] = schema ? [] : [...flow.tools.values()].map((t) => t.declaration());

  return {
    model: typeof agent.options.model === 'string' ? agent.options.model : undefined,
    systemInstruction: system,
    contents: buildHistory(await rt.sessionEvents(), {
      agentName: agent.name,
      branch: rt.branch,
      includeContents: agent.options.includeContents ?? 'default',
    }),
    tools,
    responseSchema: schema
      ? (z.toJSONSchema(schema, { target: 'openapi-3.0', unrepresentable: 'any' }) as Record<string, unknown>)
      : undefined,
    generateContentConfig: agent.options.generateContentConfig,
    signal: rt.signal,
    agentName: agent.name,
    callIndex,
    state: rt.state(),
  };
}

/** A model's answer, and the output limit (tokens) the budgets lowered the call to, if they did. */
interface Generated {
  response: ModelResponse;
  maxOutputTokens?: number;
}

/** Checks the budgets and calls the model (onModelErrorCallback recovers its errors). */
async function generate(flow: Flow, built: ModelRequest, cbx: CallbackContext): Promise<Generated> {
  const { agent, rt } = flow;
  // Shared rate limits first: a step that must wait gives back its worker with nothing spent.
  const slot = await rt.acquireModelSlot?.(built, agent.options.model);
  // The budgets count real model calls only: a beforeModelCallback answer never reaches this point. A call whose
  // reservation does not fit what is left is sent with its output limit lowered to it: the provider stops there.
  const maxOutputTokens = await rt.checkBudget(built);
  const request: ModelRequest =
    maxOutputTokens === undefined
      ? built
      : {
          ...built,
          generateContentConfig: withMaxOutputTokens(built.generateContentConfig, maxOutputTokens),
        };
  const lowered = maxOutputTokens === undefined ? {} : { maxOutputTokens };
  try {
    const onPartial = agent.options.stream ? (partial: Content) => rt.publishPartial(partial) : undefined;
    const model = rt.resolveModel(agent.options.model);
    const timeoutMs = agent.options.modelTimeoutMs;
    await rt.fault('before-model-send');
    const response = await withDeadline(
      // The lease check is the last thing before the request leaves (ARCHITECTURE "Zombie worker"): a freeze in
      // the awaits above (history, callbacks, the budget) must not send on waking.
      (signal) =>
        rt.sendLeased(() =>
          model.generate(
            { ...forModel(request, agent.options.model), signal },
            {
              ...(onPartial ? { onPartial } : {}),
              sendLeased: (send) => rt.sendLeased(send),
              ...(slot ? { onRateLimited: (ms: number) => slot.onRateLimited(ms) } : {}),
            },
          ),
        ),
      {
        parent: rt.signal,
        timeoutMs,
        error: () =>
          new AgentloomError(
            'TIMEOUT',
            `model call of ${agent.name} did not answer within modelTimeoutMs (${timeoutMs} ms); raise modelTimeoutMs if the model needs longer`,
            { details: { agent: agent.name, modelTimeoutMs: timeoutMs } },
          ),
      },
    );
    await slot?.settle(response);
    return { response, ...lowered };
  } catch (err) {
    // A database fault inside a model client (or a simulated crash) escapes as it is: wrapped in MODEL_ERROR
    // it would fail the node, and onModelErrorCallback is for the model's failures, not the machinery's.
    if (isControlFlow(err) || rt.signal.aborted) throw err;
    const recovered = await pipeline.onModelError(
      flow.stages,
      agent.callbacks.onModelErrorCallback,
      cbx,
      request,
      err,
    );
    if (recovered) return { response: recovered, ...lowered };
    throw err instanceof AgentloomError
      ? err
      : new AgentloomError('MODEL_ERROR', `model call of ${agent.name} failed: ${(err as Error).message}`, {
          cause: err,
        });
  }
}

/**
 * The request as the model instance gets it. `request.model` names the model as the agent does (a registered name
 * such as `fast`, a provider id such as `openai/gpt-4.1`: what budgets, prices and rate limits key on); that name
 * was resolved to `model`, which knows its own provider model id, so it is not sent on. A callback that set another
 * model id keeps it (Gemini serves several).
 */
function forModel(request: ModelRequest, ref: unknown): ModelRequest {
  if (request.model === undefined || request.model !== ref) return request;
  const { model: _named, ...rest } = request;
  return rest;
}

/** The response content with an id on every function call. */
function withCallIds(response: ModelResponse): Content {
  return {
    role: 'model',
    parts: response.content.parts.map((p) =>
      p.functionCall && !p.functionCall.id
        ? { ...p, functionCall: { ...p.functionCall, id: newId('call') } }
        : p,
    ),
  };
}

/** Ids of the calls to long-running tools: the model event carries them, as ADK's does (clients look there). */
function longRunningIds(flow: Flow, content: Content): string[] {
  return functionCallsOf(content).flatMap((call) =>
    flow.tools.get(call.name)?.isLongRunning && call.id ? [call.id] : [],
  );
}

/**
 * Records `outputKey` for a final answer into `delta`: its text, or with outputSchema the validated JSON. Returns
 * the OUTPUT_SCHEMA error instead of throwing it, so the answer is stored before the node fails.
 */
function recordOutput(agent: LlmFlowAgent, content: Content, delta: Record<string, unknown>): unknown {
  const key = agent.options.outputKey;
  if (!key || functionCallsOf(content).length > 0) return undefined;
  try {
    delta[key] = finalValue(agent, content);
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Calls the model (callbacks around it) and stores the response event. Returns the stored event. */
async function callModel(flow: Flow, callIndex: number): Promise<Event> {
  const { agent, rt } = flow;
  // Cancellation and budget are checked before every model call (SEMANTICS §3).
  if (rt.signal.aborted) throw new AgentloomError('CANCELLED', 'the invocation was cancelled');
  await rt.checkLease();
  const request = await buildRequest(flow, callIndex);
  const delta: Record<string, unknown> = {};
  const cbx = callbackContext(flow, delta);
  // A short-circuit answer (a plugin's or the agent's) is stored below as the model's would be: a re-run finds it in
  // the journal and asks nobody again.
  const answered = await pipeline.beforeModel(flow.stages, agent.callbacks.beforeModelCallback, cbx, request);
  const sent = answered ? undefined : await generate(flow, request, cbx);
  const generated = sent?.response;
  // Crash here → the call's spend was not counted and its event not stored: the next attempt calls again (and checks
  // the budgets again against what is committed then).
  if (generated) await rt.fault('after-model-call');
  let response = (answered ?? generated) as ModelResponse;
  response =
    (await pipeline.afterModel(flow.stages, agent.callbacks.afterModelCallback, cbx, response)) ?? response;
  const content = withCallIds(response);
  const outputError = recordOutput(agent, content, delta);
  const longRunning = longRunningIds(flow, content);
  const event = await rt.emit(
    {
      author: agent.name,
      content,
      ...(longRunning.length > 0 ? { longRunningToolIds: longRunning } : {}),
      actions: {
        artifactDelta: {},
        stateDelta: delta,
        modelRequest: {
          ...requestDigest(request),
          ...(sent?.maxOutputTokens === undefined ? {} : { maxOutputTokens: sent.maxOutputTokens }),
        },
        ...(response.usage ? { usage: response.usage } : {}),
      },
    },
    generated ? { modelCall: { model: modelIdOf(agent), usage: generated.usage } } : undefined,
  );
  await rt.fault('after-model-event');
  if (outputError) throw outputError;
  return event;
}

/** The model id an agent's calls are priced by: its model's id or registered name, else the model's own name. */
function modelIdOf(agent: LlmFlowAgent): string {
  const model = agent.options.model;
  return typeof model === 'string' ? model : (model?.name ?? 'default');
}

/** The final value of a response: its text, or with outputSchema the parsed and validated JSON. */
function finalValue(agent: LlmFlowAgent, content: Content): unknown {
  return agent.outputValue(textOf(content) ?? '');
}

async function runRound(flow: Flow, calls: FunctionCall[]): Promise<CallResult[]> {
  // Every call runs to its end before a suspension (waiting for a child) propagates, so no response is lost.
  const settled = await Promise.allSettled(calls.map((call) => resolveCall(flow, call)));
  const rejected = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
  const failure = rejected.find((r) => !(r instanceof NodeSuspended));
  if (failure !== undefined) throw failure;
  if (rejected.length > 0) throw NodeSuspended.merge(rejected as NodeSuspended[]);
  return settled.map((s) => (s as PromiseFulfilledResult<CallResult>).value);
}

async function beforeAgent(flow: Flow): Promise<LeafOutcome | undefined> {
  const { agent, rt } = flow;
  const chain = agent.callbacks.beforeAgentCallback;
  if (!pipeline.hasAgentStage(flow.stages, chain, 'beforeAgentCallback')) return undefined;
  if (rt.journal.some((e) => e.author === agent.name)) return undefined;
  const delta: Record<string, unknown> = {};
  const answer = await pipeline.beforeAgent(flow.stages, chain, callbackContext(flow, delta));
  if (!answer) {
    if (Object.keys(delta).length > 0)
      await rt.emit({ author: agent.name, actions: { stateDelta: delta, artifactDelta: {} } });
    return undefined;
  }
  // The callback's content is the agent's final response: outputKey stores it as it would the model's.
  const content: Content = { ...answer, role: 'model' };
  const outputError = recordOutput(agent, content, delta);
  await rt.emit({ author: agent.name, content, actions: { stateDelta: delta, artifactDelta: {} } });
  if (outputError) return { status: 'failed', error: toStoredError(outputError) };
  return { status: 'completed', output: textOf(content) };
}

/** Runs (or resumes) one activation of an LlmAgent. */
export async function runLlmFlow(agent: LlmFlowAgent, rt: NodeRuntime): Promise<LeafOutcome> {
  const flow: Flow = {
    agent,
    rt,
    journal: new Journal(rt.journal, agent.name, rt.withdrawnCalls),
    tools: new Map(),
    stages: { plugins: rt.plugins, agent },
  };
  try {
    flow.tools = await toolsOf(agent, rt);
  } catch (err) {
    if (isControlFlow(err)) throw err;
    return { status: 'failed', error: toStoredError(err) };
  }
  const short = await beforeAgent(flow);
  if (short) return short;
  const stored = flow.journal.modelEvents();
  for (let round = 0; ; round++) {
    if (round >= agent.maxIterations) return maxIterations(flow);
    let modelEvent = stored[round];
    if (!modelEvent) {
      try {
        modelEvent = await callModel(flow, round);
      } catch (err) {
        // Over a budget with onExceeded 'pause': the node pauses before the call; answered, it runs from here.
        if (err instanceof BudgetPaused) return { status: 'paused', requests: [err.request] };
        // Infrastructure faults (storing the response, reading history) leave the step for the queue to re-run.
        if (isControlFlow(err)) throw err;
        return { status: 'failed', error: toStoredError(err) };
      }
    }
    const calls = functionCallsOf(modelEvent.content);
    if (calls.length === 0) {
      if (agent.options.outputSchema) {
        try {
          finalValue(agent, modelEvent.content as Content);
        } catch (err) {
          return { status: 'failed', error: toStoredError(err) };
        }
      }
      return finish(flow, { status: 'completed', output: textOf(modelEvent.content) });
    }
    const results = await runRound(flow, calls);
    const outcome = await afterRound(flow, results);
    if (outcome) return outcome;
  }
}

async function afterRound(flow: Flow, results: CallResult[]): Promise<LeafOutcome | undefined> {
  const pending: PauseRequest[] = results.flatMap((r) => (r.kind === 'pending' ? [r.request] : []));
  if (pending.length > 0) return { status: 'paused', requests: pending };
  if (results.some((r) => r.kind === 'child_paused')) return { status: 'paused', requests: [] };
  const done = results.flatMap((r) => (r.kind === 'done' ? [r] : []));
  const transfer = done.find((r) => r.actions.transferToAgent)?.actions.transferToAgent;
  if (transfer) {
    const outcome = await flow.rt.runChild(transfer, { segment: transfer, branch: flow.rt.branch });
    if (outcome.status === 'completed')
      return { status: 'completed', escalated: outcome.escalated, output: outcome.output };
    if (outcome.status === 'paused') return { status: 'paused', requests: [] };
    if (outcome.status === 'failed')
      return {
        status: 'failed',
        error: outcome.error ?? { code: 'INTERNAL', message: 'transfer target failed' },
      };
    return { status: 'failed', error: { code: 'CANCELLED', message: 'transfer target was cancelled' } };
  }
  if (done.some((r) => r.actions.escalate)) return finish(flow, { status: 'completed', escalated: true });
  if (done.length > 0 && done.every((r) => r.actions.skipSummarization)) {
    const last = done[done.length - 1];
    return finish(flow, { status: 'completed', output: last ? JSON.stringify(last.response) : undefined });
  }
  return undefined;
}

async function maxIterations(flow: Flow): Promise<LeafOutcome> {
  const message = `${flow.agent.name} made ${flow.agent.maxIterations} model calls without a final answer (maxIterations)`;
  if (!flow.journal.errorEvent('MAX_ITERATIONS')) {
    await flow.rt.emit({
      author: flow.agent.name,
      errorCode: 'MAX_ITERATIONS',
      errorMessage: message,
      actions: { stateDelta: {}, artifactDelta: {} },
    });
  }
  return { status: 'failed', error: { code: 'MAX_ITERATIONS', message } };
}

async function finish(
  flow: Flow,
  outcome: Extract<LeafOutcome, { status: 'completed' }>,
): Promise<LeafOutcome> {
  const { agent, rt } = flow;
  const chain = agent.callbacks.afterAgentCallback;
  if (!pipeline.hasAgentStage(flow.stages, chain, 'afterAgentCallback')) return outcome;
  // Replay: an after-agent answer already stored stands; the callbacks are not asked again.
  const stored = rt.journal.find((e) => e.author === agent.name && e.actions.agentState?.afterAgent === true);
  if (stored) return { ...outcome, output: textOf(stored.content) ?? outcome.output };
  const delta: Record<string, unknown> = {};
  const content = await pipeline.afterAgent(flow.stages, chain, callbackContext(flow, delta));
  if (content || Object.keys(delta).length > 0) {
    await rt.emit({
      author: agent.name,
      ...(content ? { content: { ...content, role: 'model' as const } } : {}),
      actions: { stateDelta: delta, artifactDelta: {}, agentState: { afterAgent: true } },
    });
  }
  return content ? { ...outcome, output: textOf(content) ?? outcome.output } : outcome;
}
