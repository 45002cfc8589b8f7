/**
 * A remote task that asks for input (`input-required`, `auth-required`) pauses our run with the remote's question,
 * as a long-running call of the node that the API, the CLI and the console answer like any other; the answer is
 * forwarded to the remote task (a text part for `{text}` or `{answer}`, else the answer as a data part). Read from
 * the node's journal, never from memory: which question was asked under which call id, which answer was forwarded.
 */
import { functionResponsesOf } from '../../core/content.js';
import type { Event } from '../../core/event.js';
import type { PauseRequest } from '../context.js';
import { dataOfParts, dataPart, textPart } from './a2a-connection.js';
import type { RemoteTask } from './remote-task.js';
import type { Part } from '@a2a-js/sdk';

/** Name of the long-running call a remote agent's question is asked under. */
export const REMOTE_INPUT = 'agentloom_remote_input';

/** A question of the remote that this node asked our user (`actions.agentState.remoteInput` of its event). */
export interface InputRequest {
  callId: string;
  /** The remote status message that asked (its messageId; '' when it had none). */
  questionId: string;
}

function requestOf(event: Event, agent: string): InputRequest | undefined {
  if (event.author !== agent) return undefined;
  const request = event.actions.agentState?.remoteInput as InputRequest | undefined;
  return request?.callId ? request : undefined;
}

/** The question this node asked last and has not forwarded an answer to, if any. */
export function openRequest(journal: readonly Event[], agent: string): InputRequest | undefined {
  let open: InputRequest | undefined;
  for (const event of journal) {
    const request = requestOf(event, agent);
    if (request) open = request;
    if (event.author === agent && event.actions.agentState?.remoteAnswered === open?.callId) open = undefined;
  }
  return open;
}

/** Our user's answer to a question (the latest function response with its call id). */
export function answerOf(journal: readonly Event[], callId: string): Record<string, unknown> | undefined {
  let found: Record<string, unknown> | undefined;
  for (const event of journal) {
    if (event.author !== 'user') continue;
    const response = functionResponsesOf(event.content).find((r) => r.id === callId);
    if (response) found = response.response;
  }
  return found;
}

/** The parts an answer is forwarded as: its text (`{text}` or `{answer}`), else the object as a data part. */
export function answerParts(answer: Record<string, unknown>): Part[] {
  const text = typeof answer.text === 'string' ? answer.text : answer.answer;
  return typeof text === 'string' ? [textPart(text)] : [dataPart(answer)];
}

/** The id of the remote's current question (its status message's id). */
export function questionIdOf(task: RemoteTask): string {
  return task.statusMessage?.messageId ?? '';
}

/**
 * The id a call of this node that waits for an answer is asked under: its own, or when that one was withdrawn (its
 * run cancelled, then retried), `<id>~2`, `<id>~3`, … The answer is stored under the call's own id either way.
 */
export function askIdOf(withdrawn: ReadonlySet<string> | undefined, callId: string): string {
  if (!withdrawn?.has(callId)) return callId;
  let n = 2;
  while (withdrawn.has(`${callId}~${n}`)) n += 1;
  return `${callId}~${n}`;
}

/** The pending call our user answers: the remote's question, and its data parts (e.g. the calls it waits on). */
export function pauseRequestOf(
  task: RemoteTask,
  callId: string,
  agent: string,
  withdrawn?: ReadonlySet<string>,
): PauseRequest {
  const question = task.statusText() || `remote agent ${agent} asks for input`;
  const data = dataOfParts(task.statusMessage?.parts);
  return {
    callId: askIdOf(withdrawn, callId),
    kind: 'long_running',
    name: REMOTE_INPUT,
    args: { question, taskId: task.taskId ?? '', ...(data.length > 0 ? { data } : {}) },
    originalCallId: callId,
    hint: question,
    ...(data.length > 0 ? { payload: data } : {}),
  };
}
