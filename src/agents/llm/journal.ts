/**
 * Reading an LlmAgent node's journal: the events it stored in earlier attempts. Which model calls were made,
 * which tool calls have responses, which confirmations and long-running calls were answered — all decided
 * from stored events, never from "the last two events".
 */
import { functionCallsOf, functionResponsesOf, type FunctionResponse } from '../../core/content.js';
import type { Event } from '../../core/event.js';

/** Name of the framework call that asks a human to confirm a tool call. */
export const REQUEST_CONFIRMATION = 'adk_request_confirmation';
/** Name of the framework call that asks the user for input while a tool call is open (an MCP elicitation). */
export const REQUEST_ELICITATION = 'agentloom_request_elicitation';
/** Name of the framework call that asks the user for a tool's credential (ADK's). */
export const REQUEST_CREDENTIAL = 'adk_request_credential';

const FRAMEWORK_CALLS = new Set([REQUEST_CONFIRMATION, REQUEST_ELICITATION, REQUEST_CREDENTIAL]);

/** Whether a function name belongs to the framework (a request to a human) rather than to a tool. */
export function isFrameworkCall(name: string): boolean {
  return FRAMEWORK_CALLS.has(name);
}

/** The journal of one node for one agent. */
export class Journal {
  /**
   * @param withdrawn ids of this node's paused calls that were cancelled with their invocation (NodeRuntime
   *   `withdrawnCalls`): a confirmation request among them no longer stands, and a call waiting under one of them
   *   waits again under a new id ({@link askId}).
   */
  constructor(
    private readonly events: readonly Event[],
    private readonly agentName: string,
    private readonly withdrawn: ReadonlySet<string> = new Set(),
  ) {}

  /**
   * The id a call that waits for an answer (long-running, in doubt) is asked under: its own id, or when that one
   * was withdrawn, `<id>~2`, `<id>~3`, … (the first not withdrawn). Deterministic, so every attempt asks the same.
   */
  askId(callId: string): string {
    if (!this.withdrawn.has(callId)) return callId;
    let n = 2;
    while (this.withdrawn.has(`${callId}~${n}`)) n += 1;
    return `${callId}~${n}`;
  }

  /** Model responses of this agent, oldest first (framework request events excluded). */
  modelEvents(): Event[] {
    return this.events.filter(
      (e) =>
        e.author === this.agentName &&
        e.content?.role === 'model' &&
        !e.errorCode &&
        !functionCallsOf(e.content).some((c) => isFrameworkCall(c.name)),
    );
  }

  /** The event with this errorCode, if the agent already stored one. */
  errorEvent(code: string): Event | undefined {
    return this.events.find((e) => e.author === this.agentName && e.errorCode === code);
  }

  /** The real (non-placeholder) response this agent stored for a call, with its event. */
  toolResponse(callId: string): { event: Event; response: FunctionResponse } | undefined {
    for (const event of this.events) {
      if (event.author !== this.agentName) continue;
      if (event.actions.requestedToolConfirmations?.[callId]) continue;
      // An interim long-running response is not the call's answer.
      if (event.longRunningToolIds?.includes(callId)) continue;
      const response = functionResponsesOf(event.content).find((r) => r.id === callId);
      if (response) return { event, response };
    }
    return undefined;
  }

  /**
   * The confirmation request standing for a call: its request call id, hint and payload. A request withdrawn by a
   * cancel does not stand (the call asks again with a new request); of several, the last.
   */
  confirmationRequest(callId: string): { requestId: string; hint?: string; payload?: unknown } | undefined {
    let found: { requestId: string; hint?: string; payload?: unknown } | undefined;
    for (const event of this.events) {
      if (event.author !== this.agentName) continue;
      for (const call of functionCallsOf(event.content)) {
        if (call.name !== REQUEST_CONFIRMATION || !call.id) continue;
        const args = call.args as {
          originalFunctionCall?: { id?: string };
          toolConfirmation?: { hint?: string; payload?: unknown };
        };
        if (args.originalFunctionCall?.id === callId && !this.withdrawn.has(call.id)) {
          found = {
            requestId: call.id,
            hint: args.toolConfirmation?.hint,
            payload: args.toolConfirmation?.payload,
          };
        }
      }
    }
    return found;
  }

  /** The standing (not withdrawn) credential request of a call: its request call id; of several, the last. */
  credentialRequest(callId: string): string | undefined {
    let found: string | undefined;
    for (const event of this.events) {
      if (event.author !== this.agentName) continue;
      for (const call of functionCallsOf(event.content)) {
        if (call.name !== REQUEST_CREDENTIAL || !call.id || this.withdrawn.has(call.id)) continue;
        if ((call.args as { functionCallId?: unknown }).functionCallId === callId) found = call.id;
      }
    }
    return found;
  }

  /**
   * Whether this call was answered with an interim long-running response. (The model event that made the call
   * lists it in `longRunningToolIds` too; only a response event says the tool ran.)
   */
  isLongRunning(callId: string): boolean {
    return this.events.some(
      (e) =>
        e.author === this.agentName &&
        (e.longRunningToolIds ?? []).includes(callId) &&
        functionResponsesOf(e.content).some((r) => r.id === callId),
    );
  }

  /** The latest answer from outside (a user function response) to the given call id. */
  userResponse(callId: string): FunctionResponse | undefined {
    let found: FunctionResponse | undefined;
    for (const event of this.events) {
      if (event.author !== 'user') continue;
      const response = functionResponsesOf(event.content).find((r) => r.id === callId);
      if (response) found = response;
    }
    return found;
  }

  /**
   * Whether this call handed its work to a child node (an AgentTool's agent): the marker is stored before the
   * child is created, so a re-run of the node after the child ends knows the call's callbacks already decided.
   */
  wasDelegated(callId: string): boolean {
    return this.events.some(
      (e) => e.author === this.agentName && e.actions.agentState?.delegatedCall === callId,
    );
  }

  /**
   * Whether an unsafe tool call was started (marker stored before it ran) and not since refused for its
   * credential (the service refused it, so the call had no effect and may run again after the user's consent).
   */
  wasStarted(callId: string): boolean {
    let started = false;
    for (const event of this.events) {
      if (event.author !== this.agentName) continue;
      if (event.actions.agentState?.startedCall === callId) started = true;
      else if (this.refusalsIn(event, callId) > 0) started = false;
    }
    return started;
  }

  /** Whether the call's credential was refused by its service once already (the user was asked again for it). */
  credentialRefused(callId: string): boolean {
    return this.events.some((e) => e.author === this.agentName && this.refusalsIn(e, callId) > 0);
  }

  private refusalsIn(event: Event, callId: string): number {
    return functionCallsOf(event.content).filter((call) => {
      const args = call.args as { functionCallId?: unknown; reason?: unknown } | undefined;
      return call.name === REQUEST_CREDENTIAL && args?.functionCallId === callId && args.reason === 'refused';
    }).length;
  }
}

/**
 * Elicitations an earlier attempt of the node asked and that got no answer event: the call that asked ended with
 * that attempt (a crash, a shutdown), so they can no longer be answered.
 */
export function openElicitations(events: readonly Event[]): string[] {
  const answered = new Set(events.flatMap((e) => functionResponsesOf(e.content).map((r) => r.id)));
  return events.flatMap((e) =>
    functionCallsOf(e.content)
      .filter((c) => c.name === REQUEST_ELICITATION && c.id !== undefined && !answered.has(c.id))
      .map((c) => c.id as string),
  );
}
