/**
 * What a RemoteA2aAgent reads from events: the markers its node stores (the remote task, its end), what it sends the
 * remote (the session since it last answered), and which stops and errors are the engine's rather than the remote's.
 */
import { TaskState, type Part } from '@a2a-js/sdk';
import { textOf } from '../../core/content.js';
import { hasErrorCode, isInfrastructureError } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import { visibleOnBranch } from '../branch.js';
import { textPart } from './a2a-connection.js';

/** Whether the task waits for input (ours to give: our user is asked). */
export function asksInput(state: TaskState): boolean {
  return state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED;
}

/** What the node's events record of its remote task (`actions.agentState`). */
export interface TaskMarker {
  remoteTask: { taskId: string; contextId: string };
  /** Set on the event that ended the node: its output or its failure is stored. */
  remoteEnded?: 'completed' | 'failed';
}

export function markerOf(event: Event, agent: string): TaskMarker | undefined {
  if (event.author !== agent) return undefined;
  const marker = event.actions.agentState?.remoteTask as TaskMarker['remoteTask'] | undefined;
  return marker?.taskId ? (event.actions.agentState as unknown as TaskMarker) : undefined;
}

/** Engine machinery (a fence, a cancel, a database fault, a simulated crash): never the remote's failure. */
export function isControlFlow(err: unknown): boolean {
  return isInfrastructureError(err) || hasErrorCode(err, 'FENCED') || hasErrorCode(err, 'CANCELLED');
}

/**
 * Whether a stop of the step should stop the remote task too: our run was cancelled or ran out of time. A lost
 * lease, a shutdown or an engine closing hands the step to another attempt, which follows the same task.
 */
export function stopsRemote(reason: unknown): boolean {
  if (hasErrorCode(reason, 'TIMEOUT')) return true;
  if (!hasErrorCode(reason, 'CANCELLED')) return false;
  return (reason as { details?: { engineClosed?: boolean } }).details?.engineClosed !== true;
}

/** The message parts for the remote: what happened in the session since this agent last answered (ADK's way). */
export function messagePartsOf(events: readonly Event[], agent: string, branch: string | undefined): Part[] {
  let start = 0;
  events.forEach((event, index) => {
    if (event.author === agent && textOf(event.content)) start = index + 1;
  });
  return events.slice(start).flatMap((event) => {
    const text = textOf(event.content);
    if (!text || event.partial || event.errorCode || !visibleOnBranch(event.branch, branch)) return [];
    return [textPart(event.author === 'user' ? text : `For context: [${event.author}] said: ${text}`)];
  });
}

/** The remote conversation this agent had in the session, to continue it: the context of its latest task. */
export function contextOf(events: readonly Event[], agent: string): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const marker = markerOf(events[i] as Event, agent);
    if (marker?.remoteTask.contextId) return marker.remoteTask.contextId;
  }
  return undefined;
}
