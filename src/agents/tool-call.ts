/**
 * One function call of a model response, resumable: a call whose response is stored is never run again; a call
 * waiting for a human stays pending; otherwise the tool runs (confirmation → callbacks → execute) and its
 * response event is stored before anything else happens.
 */
import type { FunctionCall } from '../core/content.js';
import { AgentloomError, isInfrastructureError } from '../core/errors.js';
import type { EventActions, StateAppend, ToolConfirmation } from '../core/event.js';
import { newId } from '../core/ids.js';
import { toResponseObject, type Tool, type ToolActions, type ToolContext } from '../tools/tool.js';
import { childBranch } from './branch.js';
import type { NodeRuntime, PauseRequest } from './context.js';
import { REQUEST_CONFIRMATION, type Journal } from './journal.js';
import type { LlmAgent } from './llm-agent.js';
import { recordingState } from './state-accessor.js';

/** Placeholder response of a call awaiting confirmation (ADK's wording). */
export const CONFIRMATION_PLACEHOLDER = 'This tool call requires confirmation, please approve or reject.';
/** Response of a rejected call (ADK's wording). */
export const REJECTED_RESPONSE = 'This tool call is rejected.';

/** How a call ended in this round. */
export type CallResult =
  | { kind: 'done'; response: Record<string, unknown>; actions: Partial<EventActions> }
  | { kind: 'pending'; request: PauseRequest }
  | { kind: 'child_paused' };

/** Thrown out of a tool when an AgentTool child paused: the calling node pauses with it. */
export class ChildPaused extends Error {
  constructor() {
    super('agent tool child paused');
  }
}

interface CallScope {
  agent: LlmAgent;
  rt: NodeRuntime;
  journal: Journal;
  tools: Map<string, Tool>;
}

/** Resolves one call from the journal, or runs it. */
export async function resolveCall(scope: CallScope, call: FunctionCall): Promise<CallResult> {
  const { journal } = scope;
  const id = call.id as string;
  const stored = journal.toolResponse(id);
  if (stored) return { kind: 'done', response: stored.response.response, actions: stored.event.actions };
  if (journal.isLongRunning(id)) {
    const answer = journal.userResponse(id);
    if (!answer) return { kind: 'pending', request: pendingLongRunning(call) };
    return { kind: 'done', response: answer.response, actions: {} };
  }
  const confirmation = journal.confirmationRequest(id);
  if (confirmation) {
    const answer = journal.userResponse(confirmation.requestId);
    if (!answer) {
      return { kind: 'pending', request: pendingConfirmation(call, confirmation.requestId, confirmation) };
    }
    if (answer.response.confirmed !== true) {
      return emitResponse(scope, call, { error: REJECTED_RESPONSE }, {});
    }
    const toolConfirmation: ToolConfirmation = {
      hint: confirmation.hint,
      confirmed: true,
      payload: answer.response.payload,
    };
    return runTool(scope, call, toolConfirmation);
  }
  return runTool(scope, call, undefined);
}

function pendingLongRunning(call: FunctionCall): PauseRequest {
  const id = call.id as string;
  return { callId: id, kind: 'long_running', name: call.name, args: call.args ?? {}, originalCallId: id };
}

function pendingConfirmation(
  call: FunctionCall,
  requestId: string,
  c: { hint?: string; payload?: unknown },
): PauseRequest {
  return {
    callId: requestId,
    kind: 'confirmation',
    name: call.name,
    args: call.args ?? {},
    originalCallId: call.id as string,
    hint: c.hint,
    payload: c.payload,
  };
}

async function emitResponse(
  scope: CallScope,
  call: FunctionCall,
  response: Record<string, unknown>,
  actions: Partial<EventActions>,
  longRunning = false,
): Promise<CallResult> {
  const event = await scope.rt.emit({
    author: scope.agent.name,
    content: { role: 'user', parts: [{ functionResponse: { id: call.id, name: call.name, response } }] },
    actions: { stateDelta: {}, artifactDelta: {}, ...actions },
    ...(longRunning ? { longRunningToolIds: [call.id as string] } : {}),
  });
  await scope.rt.fault('after-tool-event');
  return { kind: 'done', response, actions: event.actions };
}

interface MutableToolContext extends ToolContext {
  confirmationRequest: { hint?: string; payload?: unknown } | undefined;
  delta: Record<string, unknown>;
  appends: StateAppend[];
}

function makeToolContext(
  scope: CallScope,
  call: FunctionCall,
  toolConfirmation: ToolConfirmation | undefined,
): MutableToolContext {
  const { rt, agent } = scope;
  const delta: Record<string, unknown> = {};
  const appends: StateAppend[] = [];
  const state = recordingState(() => rt.state(), delta, appends);
  const actions: ToolActions = {};
  const id = call.id as string;
  const ctx: MutableToolContext = {
    state,
    appendToState: (key, value) => state.appendToState(key, value),
    actions,
    functionCallId: id,
    invocationId: rt.invocationId,
    agentName: agent.name,
    idempotencyKey: `${rt.invocationId}:${id}`,
    toolConfirmation,
    confirmationRequest: undefined,
    delta,
    appends,
    requestConfirmation(request = {}) {
      ctx.confirmationRequest = request;
    },
    signal: rt.signal,
    saveArtifact: (name, artifact) =>
      rt.saveArtifact(name, {
        mime: artifact.mime,
        data: typeof artifact.data === 'string' ? new TextEncoder().encode(artifact.data) : artifact.data,
      }),
    loadArtifact: (name, version) => rt.loadArtifact(name, version),
    endInvocation: () => rt.endInvocation(),
    async runAgent(agentName) {
      const segment = `${agentName}@${id}`;
      const outcome = await rt.runChild(agentName, { segment, branch: childBranch(rt.branch, segment) });
      if (outcome.status === 'paused') throw new ChildPaused();
      return outcome;
    },
  };
  return ctx;
}

function actionsOf(ctx: MutableToolContext): Partial<EventActions> {
  const actions: Partial<EventActions> = { stateDelta: ctx.delta };
  if (ctx.appends.length > 0) actions.appendToState = ctx.appends;
  if (ctx.actions.escalate) actions.escalate = true;
  if (ctx.actions.skipSummarization) actions.skipSummarization = true;
  if (ctx.actions.transferToAgent) actions.transferToAgent = ctx.actions.transferToAgent;
  return actions;
}

async function requestConfirmation(
  scope: CallScope,
  call: FunctionCall,
  request: { hint?: string; payload?: unknown },
): Promise<CallResult> {
  const requestId = newId('confirm');
  const toolConfirmation = { hint: request.hint, confirmed: false, payload: request.payload };
  await scope.rt.emit({
    author: scope.agent.name,
    content: {
      role: 'user',
      parts: [
        { functionResponse: { id: call.id, name: call.name, response: { error: CONFIRMATION_PLACEHOLDER } } },
      ],
    },
    actions: {
      stateDelta: {},
      artifactDelta: {},
      requestedToolConfirmations: { [call.id as string]: toolConfirmation },
    },
  });
  await scope.rt.emit({
    author: scope.agent.name,
    content: {
      role: 'model',
      parts: [
        {
          functionCall: {
            id: requestId,
            name: REQUEST_CONFIRMATION,
            args: {
              originalFunctionCall: { id: call.id, name: call.name, args: call.args ?? {} },
              toolConfirmation,
            },
          },
        },
      ],
    },
    longRunningToolIds: [requestId],
    actions: { stateDelta: {}, artifactDelta: {} },
  });
  return { kind: 'pending', request: pendingConfirmation(call, requestId, request) };
}

async function runTool(
  scope: CallScope,
  call: FunctionCall,
  toolConfirmation: ToolConfirmation | undefined,
): Promise<CallResult> {
  const { agent } = scope;
  const tool = scope.tools.get(call.name);
  if (!tool) {
    const known = [...scope.tools.keys()].join(', ') || 'none';
    return emitResponse(
      scope,
      call,
      { error: `tool "${call.name}" is not available to ${agent.name} (tools: ${known})` },
      {},
    );
  }
  const args = call.args ?? {};
  const ctx = makeToolContext(scope, call, toolConfirmation);
  const before = await agent.options.beforeToolCallback?.(tool, args, ctx);
  if (before) return emitResponse(scope, call, before, actionsOf(ctx));
  if (!toolConfirmation && (await tool.requiresConfirmation(args, ctx)))
    return requestConfirmation(scope, call, {});
  if (tool.sideEffects === 'unsafe') {
    if (scope.journal.wasStarted(call.id as string)) {
      const answer = scope.journal.userResponse(call.id as string);
      if (!answer) return { kind: 'pending', request: { ...pendingLongRunning(call), kind: 'in_doubt' } };
      // The human decided: skip with a given result, fail the call, or run it again.
      if (answer.response.action === 'skip')
        return emitResponse(scope, call, toResponseObject(answer.response.result ?? {}), {});
      if (answer.response.action === 'fail') {
        return emitResponse(
          scope,
          call,
          { error: String(answer.response.message ?? 'The tool call was abandoned after a crash.') },
          {},
        );
      }
    } else {
      // Crash after this marker and before the response → the call is in doubt, never silently re-run.
      await scope.rt.emit({
        author: agent.name,
        actions: { stateDelta: {}, artifactDelta: {}, agentState: { startedCall: call.id } },
      });
      await scope.rt.fault('after-tool-start');
    }
  }
  let response: Record<string, unknown>;
  try {
    await scope.rt.checkLease();
    response = toResponseObject(await tool.run(args, ctx));
  } catch (err) {
    if (err instanceof ChildPaused) return { kind: 'child_paused' };
    if (isControlFlow(err)) throw err;
    const recovered = await agent.options.onToolErrorCallback?.(tool, args, ctx, err);
    response = recovered ?? { error: err instanceof Error ? err.message : String(err) };
  }
  if (ctx.confirmationRequest && !toolConfirmation)
    return requestConfirmation(scope, call, ctx.confirmationRequest);
  const after = await agent.options.afterToolCallback?.(tool, args, ctx, response);
  if (after) response = after;
  const result = await emitResponse(scope, call, response, actionsOf(ctx), tool.isLongRunning);
  if (tool.isLongRunning) return { kind: 'pending', request: pendingLongRunning(call) };
  return result;
}

/**
 * Errors that are the engine's control flow (suspension, fencing, cancellation) or a fault of its machinery (the
 * database went away, a simulated crash), never a tool result or a model failure: they leave the step uncommitted
 * so that the queue runs it again, instead of telling the model `{error}` or failing the node for good.
 */
export function isControlFlow(err: unknown): boolean {
  if (isInfrastructureError(err)) return true;
  if (err instanceof AgentloomError) return err.code === 'FENCED' || err.code === 'CANCELLED';
  if (typeof err !== 'object' || err === null) return false;
  return (err as { suspend?: boolean }).suspend === true;
}
