/**
 * One function call of a model response, resumable: a call whose response is stored is never run again; a call
 * waiting for a human stays pending; otherwise the tool runs (confirmation → callbacks → execute) and its
 * response event is stored before anything else happens.
 */
import type { FunctionCall } from '../../core/content.js';
import { AgentloomError, AuthError, isInfrastructureError } from '../../core/errors.js';
import type { EventActions, ToolConfirmation } from '../../core/event.js';
import { newId } from '../../core/ids.js';
import { toResponseObject, type Tool } from '../../tools/tool.js';
import * as pipeline from '../../plugins/pipeline.js';
import type { PauseRequest } from '../context.js';
import type { ToolAuth } from '../../tools/auth.js';
import { REQUEST_CONFIRMATION, REQUEST_CREDENTIAL, type Journal } from './journal.js';
import {
  actionsOf,
  ChildPaused,
  makeToolContext,
  stateWrites,
  storeCallMarker,
  type CallScope,
  type MutableToolContext,
} from './tool-context.js';

export { ChildPaused };

/** Placeholder response of a call awaiting confirmation (ADK's wording). */
export const CONFIRMATION_PLACEHOLDER = 'This tool call requires confirmation, please approve or reject.';
/** Response of a rejected call (ADK's wording). */
export const REJECTED_RESPONSE = 'This tool call is rejected.';

/** How a call ended in this round. */
export type CallResult =
  | { kind: 'done'; response: Record<string, unknown>; actions: Partial<EventActions> }
  | { kind: 'pending'; request: PauseRequest }
  | { kind: 'child_paused' };

/** Resolves one call from the journal, or runs it. */
export async function resolveCall(scope: CallScope, call: FunctionCall): Promise<CallResult> {
  const { journal } = scope;
  const id = call.id as string;
  const stored = journal.toolResponse(id);
  if (stored) return { kind: 'done', response: stored.response.response, actions: stored.event.actions };
  if (journal.isLongRunning(id)) {
    const answer = journal.userResponse(id);
    if (!answer) return { kind: 'pending', request: pendingLongRunning(call, journal) };
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

/** A call waiting for its answer, asked under {@link Journal.askId} (its own id unless that one was withdrawn). */
function pendingLongRunning(call: FunctionCall, journal: Journal): PauseRequest {
  const id = call.id as string;
  return {
    callId: journal.askId(id),
    kind: 'long_running',
    name: call.name,
    args: call.args ?? {},
    originalCallId: id,
  };
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

/** Stores a framework request to a human (a long-running function call of the agent), with `writes` if any. */
async function emitRequest(
  scope: CallScope,
  id: string,
  name: string,
  args: Record<string, unknown>,
  writes: Partial<EventActions> = {},
): Promise<void> {
  await scope.rt.emit({
    author: scope.agent.name,
    content: { role: 'model', parts: [{ functionCall: { id, name, args } }] },
    longRunningToolIds: [id],
    actions: { stateDelta: {}, artifactDelta: {}, ...writes },
  });
}

/**
 * Asks a human to confirm the call: the placeholder response (carrying `writes`, what the before-tool callbacks
 * stored in state: they are not asked again after the answer) and the adk_request_confirmation call.
 */
async function requestConfirmation(
  scope: CallScope,
  call: FunctionCall,
  request: { hint?: string; payload?: unknown },
  writes: Partial<EventActions>,
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
      ...writes,
      requestedToolConfirmations: { [call.id as string]: toolConfirmation },
    },
  });
  await emitRequest(scope, requestId, REQUEST_CONFIRMATION, {
    originalFunctionCall: { id: call.id, name: call.name, args: call.args ?? {} },
    toolConfirmation,
  });
  return { kind: 'pending', request: pendingConfirmation(call, requestId, request) };
}

/**
 * Asks the run's user for the tool's credential: an `adk_request_credential` call (ADK's shape: `{functionCallId,
 * authConfig}`, the config without any secret; for OAuth2 where to consent) carrying the state the before-tool
 * callbacks wrote, and a pending call of kind `auth`. The answer is stored in the credential store, never in an
 * event (engine/runs/resume.ts). `refused`: the service refused the stored credential (asked once per call).
 */
async function requestCredential(
  scope: CallScope,
  call: FunctionCall,
  auth: ToolAuth,
  writes: Partial<EventActions>,
  refused = false,
): Promise<CallResult> {
  const id = call.id as string;
  let requestId = scope.journal.credentialRequest(id);
  // Answered, yet no credential now (revoked, expired, refused): ask again, under a new id.
  const ask = !requestId || scope.journal.userResponse(requestId) !== undefined || refused;
  if (ask) requestId = newId('auth');
  const authConfig = await scope.rt.credentials.requestConfig(auth, requestId as string);
  if (ask) {
    const args = { functionCallId: id, authConfig, ...(refused ? { reason: 'refused' } : {}) };
    await emitRequest(scope, requestId as string, REQUEST_CREDENTIAL, args, writes);
  }
  return {
    kind: 'pending',
    request: {
      callId: requestId as string,
      kind: 'auth',
      name: call.name,
      args: call.args ?? {},
      originalCallId: id,
      auth: authConfig,
    },
  };
}

/**
 * The auth gate: the credential into `ctx`, or the result that stands for the call without one (a pause for the
 * user's consent; the tool's error when a token endpoint cannot be used).
 */
async function authGate(
  scope: CallScope,
  call: FunctionCall,
  auth: ToolAuth,
  ctx: MutableToolContext,
): Promise<CallResult | undefined> {
  try {
    ctx.credential = await scope.rt.credentials.get(auth);
  } catch (err) {
    if (isControlFlow(err) || (err instanceof AgentloomError && err.code === 'CONFIG')) throw err;
    return emitResponse(scope, call, { error: err instanceof Error ? err.message : String(err) }, {});
  }
  return ctx.credential ? undefined : requestCredential(scope, call, auth, stateWrites(ctx));
}

/** A credential the service refused: deleted, and the user asked again, unless they were for this call already. */
async function credentialRefused(
  scope: CallScope,
  call: FunctionCall,
  auth: ToolAuth,
): Promise<CallResult | undefined> {
  await scope.rt.credentials.revoke(auth);
  if (scope.journal.credentialRefused(call.id as string)) return undefined;
  return requestCredential(scope, call, auth, {}, true);
}

function unknownTool(scope: CallScope, call: FunctionCall): Promise<CallResult> {
  const known = [...scope.tools.keys()].join(', ') || 'none';
  const error = `tool "${call.name}" is not available to ${scope.agent.name} (tools: ${known})`;
  return emitResponse(scope, call, { error }, {});
}

/**
 * The before-tool callbacks, then the confirmation check; a result when they decided the call's outcome. Skipped
 * when the journal shows the call already got past them (a confirmation was answered, the call handed its work to
 * a child node, an unsafe call was started): a re-run of the node never asks a callback again about a call it
 * already let through.
 */
async function beforeTool(
  scope: CallScope,
  call: FunctionCall,
  tool: Tool,
  ctx: MutableToolContext,
  args: Record<string, unknown>,
): Promise<CallResult | undefined> {
  const id = call.id as string;
  if (
    ctx.toolConfirmation ||
    scope.journal.wasDelegated(id) ||
    scope.journal.wasStarted(id) ||
    scope.journal.credentialRequest(id)
  )
    return undefined;
  // A plugin's or the agent's answer is stored as the tool's response: a re-run finds it and asks nobody again.
  const answer = await pipeline.beforeTool(stagesOf(scope), scope.agent.callbacks.beforeToolCallback, {
    tool,
    args,
    ctx,
  });
  if (answer) return emitResponse(scope, call, answer, actionsOf(ctx));
  if (await tool.requiresConfirmation(args, ctx))
    return requestConfirmation(scope, call, {}, stateWrites(ctx));
  return undefined;
}

/**
 * An unsafe tool's crash guard: a call started before (marker stored, no response) is in doubt until a human
 * decides; a first start stores the marker. Returns a result when the call must not run now.
 */
async function guardUnsafe(
  scope: CallScope,
  call: FunctionCall,
  ctx: MutableToolContext,
): Promise<CallResult | undefined> {
  const id = call.id as string;
  if (!scope.journal.wasStarted(id)) {
    // Crash after this marker and before the response → the call is in doubt, never silently re-run.
    await storeCallMarker(scope, ctx, { startedCall: id });
    await scope.rt.fault('after-tool-start');
    return undefined;
  }
  const answer = scope.journal.userResponse(id);
  if (!answer)
    return { kind: 'pending', request: { ...pendingLongRunning(call, scope.journal), kind: 'in_doubt' } };
  // The human decided: skip with a given result, fail the call, or run it again.
  if (answer.response.action === 'skip')
    return emitResponse(scope, call, toResponseObject(answer.response.result ?? {}), {});
  if (answer.response.action === 'fail') {
    const message = String(answer.response.message ?? 'The tool call was abandoned after a crash.');
    return emitResponse(scope, call, { error: message }, {});
  }
  return undefined;
}

async function runTool(
  scope: CallScope,
  call: FunctionCall,
  toolConfirmation: ToolConfirmation | undefined,
): Promise<CallResult> {
  const { agent } = scope;
  const tool = scope.tools.get(call.name);
  if (!tool) return unknownTool(scope, call);
  const args = call.args ?? {};
  const ctx = makeToolContext(scope, call, toolConfirmation);
  const decided = await beforeTool(scope, call, tool, ctx, args);
  if (decided) return decided;
  // The auth gate: after confirmation (a rejected call never costs a consent), before the call runs.
  if (tool.auth) {
    const gated = await authGate(scope, call, tool.auth, ctx);
    if (gated) return gated;
  }
  if (tool.sideEffects === 'unsafe') {
    const guarded = await guardUnsafe(scope, call, ctx);
    if (guarded) return guarded;
  }
  // What the before-tool callbacks wrote and no marker stored: kept with a confirmation the tool may request.
  const beforeWrites = stateWrites(ctx);
  let response: Record<string, unknown>;
  try {
    await scope.rt.fault('before-tool-send');
    // The lease check is the last thing before the call starts (ARCHITECTURE "Zombie worker").
    response = toResponseObject(await scope.rt.sendLeased(() => tool.run(args, ctx)));
  } catch (err) {
    if (err instanceof ChildPaused) return { kind: 'child_paused' };
    if (isControlFlow(err)) throw err;
    if (err instanceof AuthError && tool.auth) {
      const asked = await credentialRefused(scope, call, tool.auth);
      if (asked) return asked;
    }
    const recovered = await pipeline.onToolError(
      stagesOf(scope),
      agent.callbacks.onToolErrorCallback,
      { tool, args, ctx },
      err,
    );
    response = recovered ?? { error: err instanceof Error ? err.message : String(err) };
  }
  if (ctx.confirmationRequest && !toolConfirmation)
    return requestConfirmation(scope, call, ctx.confirmationRequest, beforeWrites);
  response =
    (await pipeline.afterTool(
      stagesOf(scope),
      agent.callbacks.afterToolCallback,
      { tool, args, ctx },
      response,
    )) ?? response;
  const result = await emitResponse(scope, call, response, actionsOf(ctx), tool.isLongRunning);
  if (tool.isLongRunning) return { kind: 'pending', request: pendingLongRunning(call, scope.journal) };
  return result;
}

/** The callback stages of a call: the engine's plugins, then the agent's own callbacks. */
function stagesOf(scope: CallScope): pipeline.Stages {
  return { plugins: scope.rt.plugins, agent: scope.agent };
}

/**
 * Errors that are the engine's control flow (suspension, fencing, cancellation) or a fault of its machinery (the
 * database went away, a simulated crash), never a tool result or a model failure: they leave the step uncommitted
 * so that the queue runs it again, instead of telling the model `{error}` or failing the node for good.
 */
export function isControlFlow(err: unknown): boolean {
  if (isInfrastructureError(err)) return true;
  // REPLAY_DIVERGED (engine.replay): a replayed call that does not match the recording ends the node, never
  // becomes a tool response the model would go on with.
  // PLUGIN_ERROR: a plugin threw; the step runs again (like a fault of the machinery), never a tool's {error}.
  if (err instanceof AgentloomError)
    return (
      err.code === 'FENCED' ||
      err.code === 'CANCELLED' ||
      err.code === 'REPLAY_DIVERGED' ||
      err.code === 'PLUGIN_ERROR'
    );
  if (typeof err !== 'object' || err === null) return false;
  return (err as { suspend?: boolean }).suspend === true;
}
