/**
 * The ToolContext of one function call (SEMANTICS §4): state reads and writes recorded for the call's response
 * event, side-effect flags, confirmation requests, artifacts, and AgentTool children.
 */
import type { FunctionCall } from '../../core/content.js';
import type { EventActions, StateAppend, ToolConfirmation } from '../../core/event.js';
import type { Tool, ToolActions, ToolContext } from '../../tools/tool.js';
import { childBranch } from '../branch.js';
import type { NodeRuntime } from '../context.js';
import type { Journal } from './journal.js';
import type { LlmFlowAgent } from './llm-agent-options.js';
import { recordingState } from './state-accessor.js';

/** Thrown out of a tool when an AgentTool child paused: the calling node pauses with it. */
export class ChildPaused extends Error {
  constructor() {
    super('agent tool child paused');
  }
}

/** What a call runs in: its agent, the node's runtime and journal, and the tools offered. */
export interface CallScope {
  agent: LlmFlowAgent;
  rt: NodeRuntime;
  journal: Journal;
  tools: Map<string, Tool>;
}

/** A ToolContext that also holds what the call recorded, for the event that stores its outcome. */
export interface MutableToolContext extends ToolContext {
  credential: ToolContext['credential'];
  confirmationRequest: { hint?: string; payload?: unknown } | undefined;
  delta: Record<string, unknown>;
  appends: StateAppend[];
}

/** The state writes recorded so far (a copy), as event actions. */
export function stateWrites(ctx: MutableToolContext): Partial<EventActions> {
  const actions: Partial<EventActions> = { stateDelta: { ...ctx.delta } };
  if (ctx.appends.length > 0) actions.appendToState = [...ctx.appends];
  return actions;
}

/** The state writes and side-effect flags of the call, as the actions of its response event. */
export function actionsOf(ctx: MutableToolContext): Partial<EventActions> {
  const actions = stateWrites(ctx);
  if (ctx.actions.escalate) actions.escalate = true;
  if (ctx.actions.skipSummarization) actions.skipSummarization = true;
  if (ctx.actions.transferToAgent) actions.transferToAgent = ctx.actions.transferToAgent;
  return actions;
}

/**
 * Stores a marker event of the call (`agentState`) with the state written so far (by its before-tool callbacks),
 * and forgets those writes here so they are stored once: a re-run of the node that finds the marker does not ask
 * those callbacks again.
 */
export async function storeCallMarker(
  scope: CallScope,
  ctx: MutableToolContext,
  agentState: Record<string, unknown>,
): Promise<void> {
  const writes = stateWrites(ctx);
  await scope.rt.emit({ author: scope.agent.name, actions: { artifactDelta: {}, ...writes, agentState } });
  for (const key of Object.keys(ctx.delta)) delete ctx.delta[key];
  ctx.appends.length = 0;
}

/** The context of one call; `toolConfirmation` is set when the call runs after a human confirmed it. */
export function makeToolContext(
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
    credential: undefined,
    confirmationRequest: undefined,
    delta,
    appends,
    requestConfirmation(request = {}) {
      ctx.confirmationRequest = request;
    },
    signal: rt.signal,
    sendLeased: (send) => rt.sendLeased(send),
    elicit: (request) => rt.elicit({ id, name: call.name, args: call.args ?? {} }, request),
    reportProgress({ progress, total, message }) {
      const response = {
        progress,
        ...(total !== undefined ? { total } : {}),
        ...(message !== undefined ? { message } : {}),
      };
      rt.publishPartial({ role: 'user', parts: [{ functionResponse: { id, name: call.name, response } }] });
    },
    saveArtifact: (name, artifact) =>
      rt.saveArtifact(name, {
        mime: artifact.mime,
        data: typeof artifact.data === 'string' ? new TextEncoder().encode(artifact.data) : artifact.data,
      }),
    loadArtifact: (name, version) => rt.loadArtifact(name, version),
    endInvocation: () => rt.endInvocation(),
    async runAgent(agentName) {
      const segment = `${agentName}@${id}`;
      // The call hands its work to a child node: a re-run of this node after the child ends or pauses, or after a
      // crash, finds the marker and goes straight to the child's outcome.
      if (!scope.journal.wasDelegated(id)) await storeCallMarker(scope, ctx, { delegatedCall: id });
      const outcome = await rt.runChild(agentName, { segment, branch: childBranch(rt.branch, segment) });
      if (outcome.status === 'paused') throw new ChildPaused();
      return outcome;
    },
  };
  return ctx;
}
