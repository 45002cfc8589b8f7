/**
 * What we know of a remote A2A task, folded from what the remote answers: the task snapshots of `tasks/get` and
 * the events of a stream (`message/stream`, `tasks/resubscribe`). Pure: no I/O.
 */
import { TaskState, type Artifact, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { textOfParts } from './a2a-connection.js';

/** The states in which a task no longer works without us: it ended, or it waits for input. */
const SETTLED = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

/** A remote task as far as we have seen it. */
export class RemoteTask {
  taskId: string | undefined;
  contextId: string | undefined;
  state: TaskState = TaskState.TASK_STATE_SUBMITTED;
  /** The latest status message (a failure's reason, an input request's question). */
  statusMessage: Message | undefined;
  /** The remote answered with a message instead of a task: the whole answer. */
  directAnswer: Message | undefined;
  private readonly artifacts = new Map<string, Artifact>();

  /** Whether the task ended or waits for input (or the remote answered without a task). */
  get settled(): boolean {
    return this.directAnswer !== undefined || SETTLED.has(this.state);
  }

  /** Takes in a task snapshot (its artifacts replace those seen so far). */
  applyTask(task: Task): void {
    this.taskId = task.id;
    this.contextId = task.contextId || this.contextId;
    if (task.status) this.applyStatus(task.status.state, task.status.message);
    this.artifacts.clear();
    for (const artifact of task.artifacts) this.artifacts.set(artifact.artifactId, artifact);
  }

  /**
   * Takes in a stream event; returns the text to show live listeners (a status message's or an artifact chunk's),
   * if any.
   */
  applyStream(response: StreamResponse): string | undefined {
    const payload = response.payload;
    if (!payload) return undefined;
    switch (payload.$case) {
      case 'task':
        this.applyTask(payload.value);
        return undefined;
      case 'message':
        this.directAnswer = payload.value;
        this.contextId = payload.value.contextId || this.contextId;
        return undefined;
      case 'statusUpdate': {
        const { taskId, contextId, status } = payload.value;
        this.taskId ??= taskId;
        this.contextId ??= contextId;
        if (!status) return undefined;
        this.applyStatus(status.state, status.message);
        return textOfParts(status.message?.parts) || undefined;
      }
      case 'artifactUpdate': {
        const { taskId, contextId, artifact, append } = payload.value;
        this.taskId ??= taskId;
        this.contextId ??= contextId;
        if (!artifact) return undefined;
        const before = this.artifacts.get(artifact.artifactId);
        this.artifacts.set(
          artifact.artifactId,
          append && before ? { ...before, parts: [...before.parts, ...artifact.parts] } : artifact,
        );
        return textOfParts(artifact.parts) || undefined;
      }
    }
  }

  private applyStatus(state: TaskState, message: Message | undefined): void {
    this.state = state;
    if (message) this.statusMessage = message;
  }

  /** The answer's text: the artifacts' text (in the order they came), else the last status message's. */
  outputText(): string {
    if (this.directAnswer) return textOfParts(this.directAnswer.parts);
    const fromArtifacts = [...this.artifacts.values()]
      .map((a) => textOfParts(a.parts))
      .filter((t) => t !== '');
    if (fromArtifacts.length > 0) return fromArtifacts.join('\n');
    return textOfParts(this.statusMessage?.parts);
  }

  /** The status message's text (a failure's reason, an input request's question). */
  statusText(): string {
    return textOfParts(this.statusMessage?.parts);
  }
}
