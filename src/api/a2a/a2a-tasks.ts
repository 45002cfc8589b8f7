/**
 * An invocation as an A2A task (the invocation IS the task, read from the engine's own tables): taskId = invocation
 * id, contextId = session id, state from the invocation's status, a pause as `input-required` with each pending call
 * as a DataPart, the output as an artifact, the history from the invocation's stored events.
 */
import { Role, TaskState, type Artifact, type Message, type Part, type Task } from '@a2a-js/sdk';
import type { Event } from '../../core/event.js';
import type { InvocationView, PendingCall } from '../../engine/runs/views.js';

/** The A2A state of an invocation status. */
export function taskStateOf(status: InvocationView['status']): TaskState {
  switch (status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
      return TaskState.TASK_STATE_WORKING;
    case 'paused':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'completed':
      return TaskState.TASK_STATE_COMPLETED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
  }
}

/** The invocation status an A2A state filter names (ListTasks); undefined: no such status here. */
export function invocationStatusOf(state: TaskState): InvocationView['status'] | undefined {
  const statuses = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] as const;
  return statuses.find((status) => taskStateOf(status) === state);
}

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} };
}

/** A data part (a JSON object). */
export function dataPart(value: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: {} };
}

/** A message of the agent (or the user) in a task. */
export function taskMessage(options: {
  id: string;
  taskId: string;
  contextId: string;
  role: Role;
  parts: Part[];
}): Message {
  return {
    messageId: options.id,
    taskId: options.taskId,
    contextId: options.contextId,
    role: options.role,
    parts: options.parts,
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * What a paused call asks, as a DataPart: answer it with a DataPart `{callId, confirmed}` (a confirmation) or
 * `{callId, response}` (a long-running call, or any other kind) in a message with this task's id.
 */
export function pendingPart(call: PendingCall): Part {
  return dataPart({
    callId: call.callId,
    kind: call.kind,
    tool: call.name,
    args: call.args,
    ...(call.hint === undefined ? {} : { hint: call.hint }),
    ...(call.payload === undefined ? {} : { payload: call.payload }),
    ...(call.elicitation ? { elicitation: call.elicitation } : {}),
    ...(call.auth ? { auth: call.auth } : {}),
  });
}

/** The status message of an invocation: its pending calls, its error, or its output; undefined while it runs. */
export function statusMessageOf(view: InvocationView): Message | undefined {
  const base = {
    id: `${view.id}-${view.status}`,
    taskId: view.id,
    contextId: view.sessionId,
    role: Role.ROLE_AGENT,
  };
  if (view.status === 'paused' && view.pending.length > 0) {
    return taskMessage({
      ...base,
      id: `${view.id}-input-${view.pending[0]?.callId ?? ''}`,
      parts: view.pending.map(pendingPart),
    });
  }
  if (view.status === 'failed' && view.error) {
    return taskMessage({ ...base, parts: [textPart(`${view.error.code}: ${view.error.message}`)] });
  }
  if (view.status === 'cancelled')
    return taskMessage({ ...base, parts: [textPart('the invocation was cancelled')] });
  if (view.status === 'completed' && view.output !== null)
    return taskMessage({ ...base, parts: [textPart(view.output)] });
  return undefined;
}

/** The artifact of a completed invocation: its output text. */
export function outputArtifactOf(view: InvocationView): Artifact | undefined {
  if (view.status !== 'completed' || view.output === null) return undefined;
  return {
    artifactId: `${view.id}-output`,
    name: 'output',
    description: 'the final response of the root agent',
    parts: [textPart(view.output)],
    metadata: {},
    extensions: [],
  };
}

/** The messages of a task's history: the user's messages and the agents' final texts, in seq order. */
export function historyOf(view: InvocationView, events: readonly Event[]): Message[] {
  const messages: Message[] = [];
  for (const event of events) {
    if (event.partial || event.invocationId !== view.id) continue;
    const texts = (event.content?.parts ?? []).flatMap((part) =>
      typeof part.text === 'string' && part.text !== '' && part.thought !== true ? [textPart(part.text)] : [],
    );
    if (texts.length === 0) continue;
    messages.push(
      taskMessage({
        id: event.id,
        taskId: view.id,
        contextId: view.sessionId,
        role: event.author === 'user' ? Role.ROLE_USER : Role.ROLE_AGENT,
        parts: texts,
      }),
    );
  }
  return messages;
}

/** The task of an invocation; `historyLength` keeps the last N messages (0: none; undefined: all). */
export function taskOf(view: InvocationView, events: readonly Event[], historyLength?: number): Task {
  const history = historyOf(view, events);
  const artifact = outputArtifactOf(view);
  return {
    id: view.id,
    contextId: view.sessionId,
    status: {
      state: taskStateOf(view.status),
      message: statusMessageOf(view),
      timestamp: view.updatedAt.toISOString(),
    },
    artifacts: artifact ? [artifact] : [],
    history: historyLength === undefined ? history : historyLength <= 0 ? [] : history.slice(-historyLength),
    metadata: { app: view.app, userId: view.userId },
  };
}

/** Whether an invocation status is terminal (no answer continues it). */
export function isTerminal(status: InvocationView['status']): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}
