/**
 * The LlmAgent loop (SEMANTICS §3), journaled: every model response and tool response is a stored event, so a
 * re-run activation (crash, stall, resume) walks its journal and continues where it stopped — a stored model
 * call is never made again, a stored tool response never re-executed.
 */
import { z } from 'zod';
import { functionCallsOf, textOf, type Content, type FunctionCall } from '../core/content.js';
import { withDeadline } from '../core/deadline.js';
import { AgentloomError, toStoredError } from '../core/errors.js';
import type { Event, EventActions } from '../core/event.js';
import { newId } from '../core/ids.js';
import type { ModelRequest, ModelResponse, ToolDeclaration } from '../models/model.js';
import type { Tool } from '../tools/tool.js';
import { FunctionTool } from '../tools/function-tool.js';
import { invocationContextOf } from './base-agent.js';
import type { CallbackContext } from './callbacks.js';
import { NodeSuspended, type LeafOutcome, type NodeRuntime, type PauseRequest } from './context.js';
import { buildHistory } from './history.js';
import { renderInstruction } from './instructions.js';
import { Journal } from './journal.js';
import type { Instruction, LlmAgent } from './llm-agent.js';
import { recordingState } from './state-accessor.js';
import { isControlFlow, resolveCall, type CallResult } from './tool-call.js';

/** Name of the built-in transfer tool. */
export const TRANSFER_TOOL = 'transfer_to_agent';

interface Flow {
  agent: LlmAgent;
  rt: NodeRuntime;
  journal: Journal;
  tools: Map<string, Tool>;
}

function transferTool(agent: LlmAgent): Tool | undefined {
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

function toolsOf(agent: LlmAgent, rt: NodeRuntime): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  for (const ref of agent.options.tools ?? []) {
    const tool = rt.resolveTool(ref);
    tools.set(tool.name, tool);
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
  const global = 'options' in root ? (root as LlmAgent).options.globalInstruction : undefined;
  const system = [
    await renderOne(flow, global),
    agent.options.staticInstruction ?? '',
    await renderOne(flow, agent.options.instruction),
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

/** Calls the model (callbacks around it) and stores the response event. Returns the stored event. */
async function callModel(flow: Flow, callIndex: number): Promise<Event> {
  const { agent, rt } = flow;
  // Cancellation and budget are checked before every model call (SEMANTICS §3).
  if (rt.signal.aborted) throw new AgentloomError('CANCELLED', 'the invocation was cancelled');
  await rt.checkLease();
  await rt.reserveLlmCall();
  const request = await buildRequest(flow, callIndex);
  const delta: Record<string, unknown> = {};
  const cbx = callbackContext(flow, delta);
  let response: ModelResponse | undefined =
    (await agent.options.beforeModelCallback?.(cbx, request)) ?? undefined;
  if (!response) {
    try {
      const onPartial = agent.options.stream ? (partial: Content) => rt.publishPartial(partial) : undefined;
      const model = rt.resolveModel(agent.options.model);
      const timeoutMs = agent.options.modelTimeoutMs;
      response = await withDeadline(
        (signal) => model.generate({ ...request, signal }, onPartial ? { onPartial } : undefined),
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
    } catch (err) {
      // A database fault inside a model client (or a simulated crash) escapes as it is: wrapped in MODEL_ERROR
      // it would fail the node, and onModelErrorCallback is for the model's failures, not the machinery's.
      if (isControlFlow(err) || rt.signal.aborted) throw err;
      response = (await agent.options.onModelErrorCallback?.(cbx, request, err)) ?? undefined;
      if (!response) {
        throw err instanceof AgentloomError
          ? err
          : new AgentloomError(
              'MODEL_ERROR',
              `model call of ${agent.name} failed: ${(err as Error).message}`,
              { cause: err },
            );
      }
    }
  }
  response = (await agent.options.afterModelCallback?.(cbx, response)) ?? response;
  const content: Content = {
    role: 'model',
    parts: response.content.parts.map((p) =>
      p.functionCall && !p.functionCall.id
        ? { ...p, functionCall: { ...p.functionCall, id: newId('call') } }
        : p,
    ),
  };
  const actions: Partial<EventActions> = { stateDelta: delta };
  let outputError: AgentloomError | undefined;
  if (functionCallsOf(content).length === 0 && agent.options.outputKey) {
    try {
      delta[agent.options.outputKey] = finalValue(agent, content);
    } catch (err) {
      outputError = err as AgentloomError;
    }
  }
  const event = await rt.emit({
    author: agent.name,
    content,
    actions: { artifactDelta: {}, stateDelta: {}, ...actions },
  });
  await rt.fault('after-model-event');
  if (outputError) throw outputError;
  return event;
}

/** The final value of a response: its text, or with outputSchema the parsed and validated JSON. */
function finalValue(agent: LlmAgent, content: Content): unknown {
  const text = textOf(content) ?? '';
  const schema = agent.options.outputSchema;
  if (!schema) return text;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentloomError(
      'OUTPUT_SCHEMA',
      `${agent.name}: the model's answer is not JSON as outputSchema requires: ${text.slice(0, 200)}`,
      {
        cause: err,
      },
    );
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new AgentloomError(
      'OUTPUT_SCHEMA',
      `${agent.name}: the model's answer does not match outputSchema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      {
        details: { issues: parsed.error.issues },
      },
    );
  }
  return parsed.data;
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
  if (!agent.options.beforeAgentCallback || rt.journal.some((e) => e.author === agent.name)) return undefined;
  const delta: Record<string, unknown> = {};
  const content = await agent.options.beforeAgentCallback(callbackContext(flow, delta));
  if (!content) {
    if (Object.keys(delta).length > 0)
      await rt.emit({ author: agent.name, actions: { stateDelta: delta, artifactDelta: {} } });
    return undefined;
  }
  await rt.emit({
    author: agent.name,
    content: { ...content, role: 'model' },
    actions: { stateDelta: delta, artifactDelta: {} },
  });
  return { status: 'completed', output: textOf(content) };
}

/** Runs (or resumes) one activation of an LlmAgent. */
export async function runLlmFlow(agent: LlmAgent, rt: NodeRuntime): Promise<LeafOutcome> {
  const flow: Flow = { agent, rt, journal: new Journal(rt.journal, agent.name), tools: toolsOf(agent, rt) };
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
  if (!agent.options.afterAgentCallback) return outcome;
  const delta: Record<string, unknown> = {};
  const content = await agent.options.afterAgentCallback(callbackContext(flow, delta));
  // Replay: an after-agent event already stored is not stored again.
  const already = rt.journal.some(
    (e) => e.author === agent.name && e.actions.agentState?.afterAgent === true,
  );
  if (!already && (content || Object.keys(delta).length > 0)) {
    await rt.emit({
      author: agent.name,
      ...(content ? { content: { ...content, role: 'model' as const } } : {}),
      actions: { stateDelta: delta, artifactDelta: {}, agentState: { afterAgent: true } },
    });
  }
  return content ? { ...outcome, output: textOf(content) ?? outcome.output } : outcome;
}
