/**
 * One activation of a RemoteA2aAgent, journaled (SEMANTICS §3's promise, for a remote call): the outgoing message
 * has an id fixed by the node, and the remote task's id is stored as an event of the node as soon as it is known,
 * so a re-run after a crash follows that task (`tasks/get`, `tasks/resubscribe`) and never sends the message again.
 * Streams (`message/stream`) when the card says the remote streams, publishing its text as partial events; else
 * sends without blocking and polls. Our cancel (or deadline) cancels the remote task (`tasks/cancel`). A task that
 * asks for input pauses the node with the remote's question; the answer is forwarded to the task (remote-input.ts).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { TaskState, type SendMessageRequest, type StreamResponse } from '@a2a-js/sdk';
import { textOf } from '../../core/content.js';
import { withDeadline } from '../../core/deadline.js';
import { AgentloomError, toStoredError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { RETRIED_MARK, type LeafOutcome, type NodeRuntime } from '../context.js';
import { userMessage, type A2aConnection } from './a2a-connection.js';
import {
  answerOf,
  answerParts,
  openRequest,
  pauseRequestOf,
  questionIdOf,
  REMOTE_INPUT,
} from './remote-input.js';
import {
  asksInput,
  contextOf,
  isControlFlow,
  markerOf,
  messagePartsOf,
  stopsRemote,
  type TaskMarker,
} from './remote-journal.js';
import { guardUnsafeSend } from './remote-doubt.js';
import { RemoteTask } from './remote-task.js';

/** What the run needs of its agent. */
export interface RemoteRunAgent {
  readonly name: string;
  readonly outputKey: string | undefined;
  readonly timeoutMs: number | undefined;
  /** Whether a message maybe sent before a crash is sent again (idempotent) or asked about (unsafe). */
  readonly sideEffects: 'idempotent' | 'unsafe';
  /** The remote's card and client (fetched once per agent instance). */
  connection(): Promise<A2aConnection>;
}

/** The first poll of a remote that does not stream waits this long (ms); each next one twice as long, up to the cap. */
const FIRST_POLL_MS = 100;
const MAX_POLL_MS = 2_000;
/**
 * A resubscribe stream that sends nothing for this long (ms) is dropped and the task read again (`tasks/get`), then
 * followed again: a remote's stream that never ends cannot hold the node past its task's end.
 */
const QUIET_STREAM_MS = 15_000;
/** Reads of a known task that may fail in a row (network, remote restarting) before the node fails. */
const MAX_FAILED_READS = 5;

/** Runs (or resumes) one activation of a remote agent. */
export async function runRemote(agent: RemoteRunAgent, node: NodeRuntime): Promise<LeafOutcome> {
  const rt = sinceRetry(node, agent.name);
  const markers = rt.journal.flatMap((e) => {
    const marker = markerOf(e, agent.name);
    return marker ? [{ event: e, marker }] : [];
  });
  const ended = markers.find((m) => m.marker.remoteEnded);
  if (ended) {
    // Crash between the stored end and the node's commit: the end stands, the remote is not asked again.
    return ended.marker.remoteEnded === 'completed'
      ? { status: 'completed', output: textOf(ended.event.content) ?? '' }
      : { status: 'failed', error: { code: 'REMOTE_AGENT', message: ended.event.errorMessage ?? '' } };
  }
  const stored = markers.at(-1)?.marker.remoteTask;
  if (!stored && agent.sideEffects === 'unsafe') {
    // Before the message leaves: a start marker; a marker without a task id is in doubt (remote-doubt.ts).
    const messageId = messageIdOf(rt);
    const decided = await guardUnsafeSend(rt, { agent: agent.name, outputKey: agent.outputKey, messageId });
    if (decided) return decided;
  }
  const run = new RemoteRun(agent, rt, new RemoteTask());
  if (stored) {
    run.task.taskId = stored.taskId;
    run.task.contextId = stored.contextId;
  }
  try {
    await withDeadline((signal) => run.drive(signal), {
      parent: rt.signal,
      timeoutMs: agent.timeoutMs,
      error: () =>
        new AgentloomError(
          'TIMEOUT',
          `remote agent ${agent.name} did not finish within timeoutMs (${agent.timeoutMs} ms); its task was cancelled`,
          { details: { agent: agent.name, timeoutMs: agent.timeoutMs, taskId: run.task.taskId } },
        ),
    });
  } catch (err) {
    if (isControlFlow(err)) throw err;
    // The remote's JSON-RPC errors (an unknown task after its restart, a refused message) and transport failures.
    const failure =
      err instanceof AgentloomError
        ? err
        : new AgentloomError('REMOTE_AGENT', `remote agent ${agent.name}: ${(err as Error).message}`, {
            cause: err,
            details: { agent: agent.name, ...(run.task.taskId ? { taskId: run.task.taskId } : {}) },
          });
    return { status: 'failed', error: toStoredError(failure) };
  }
  return run.end();
}

/** The id of the node's message: the same on every attempt; after each retry of the run, a new one (`~2`, …). */
function messageIdOf(rt: NodeRuntime): string {
  const retries = retriesOf(rt);
  return `${rt.invocationId}:${rt.nodePath}${retries === 0 ? '' : `~${retries + 1}`}`;
}

const retryCounts = new WeakMap<NodeRuntime, number>();

function retriesOf(rt: NodeRuntime): number {
  return retryCounts.get(rt) ?? 0;
}

/**
 * The node's runtime as this activation sees it: its journal from the latest retry of the run that followed a known
 * task (a retried run sends the remote a new message, starting a new task, instead of following the one that failed
 * or that our cancel cancelled), every other member the node's own. A retry that followed a send in doubt (an unsafe
 * send cut before its task id was stored) cuts nothing: the doubt stands, and is asked again.
 */
function sinceRetry(rt: NodeRuntime, agent: string): NodeRuntime {
  let last = -1;
  let retries = 0;
  let knownTask = false;
  rt.journal.forEach((event, index) => {
    if (markerOf(event, agent)) knownTask = true;
    if (event.author === agent && event.actions.agentState?.[RETRIED_MARK] === true && knownTask) {
      last = index;
      retries++;
      knownTask = false;
    }
  });
  if (retries === 0) return rt;
  const journal = rt.journal.slice(last + 1);
  const view = new Proxy(rt, {
    get: (target, key) => {
      if (key === 'journal') return journal;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  retryCounts.set(view, retries);
  return view;
}

/** The activation's conversation with the remote. */
class RemoteRun {
  private connection: A2aConnection | undefined;
  /** The question this activation forwarded an answer to: until the remote moves on, it is not asked again. */
  private forwardedFor: string | undefined;

  constructor(
    private readonly agent: RemoteRunAgent,
    private readonly rt: NodeRuntime,
    readonly task: RemoteTask,
  ) {}

  /** Sends the message (unless the task is known) and follows the task until it settles. */
  async drive(signal: AbortSignal): Promise<void> {
    const onAbort = (): void => this.cancelRemote(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      this.connection = await this.connect();
      const { client, streaming } = this.connection;
      if (this.task.taskId) {
        this.task.applyTask(await client.getTask({ tenant: '', id: this.task.taskId }, { signal }));
        await this.forwardAnswer(signal);
      } else {
        try {
          await this.send(signal);
        } catch (err) {
          // A stream that broke after the task id was stored: the task is ours, followed below.
          if (!this.task.taskId || signal.aborted || isControlFlow(err)) throw err;
        }
      }
      let failedReads = 0;
      for (let waitMs = FIRST_POLL_MS; !this.settled(); waitMs = Math.min(waitMs * 2, MAX_POLL_MS)) {
        const id = this.task.taskId as string;
        if (streaming) {
          await this.resubscribe(id, signal);
          if (this.settled()) return;
        }
        await delay(waitMs, undefined, { signal });
        try {
          this.task.applyTask(await client.getTask({ tenant: '', id }, { signal }));
          failedReads = 0;
        } catch (err) {
          // A blip of the network or the remote while we wait: read again (backing off), a few times.
          if (signal.aborted || isControlFlow(err) || ++failedReads >= MAX_FAILED_READS) throw err;
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  private async connect(): Promise<A2aConnection> {
    try {
      return await this.agent.connection();
    } catch (err) {
      if (isControlFlow(err)) throw err;
      throw new AgentloomError(
        'REMOTE_AGENT',
        `remote agent ${this.agent.name}: its agent card could not be read: ${(err as Error).message}`,
        { cause: err, details: { agent: this.agent.name } },
      );
    }
  }

  /** Sends our message (its id fixed by the node: a re-sent message is the same message). */
  private async send(signal: AbortSignal): Promise<void> {
    const { rt, agent } = this;
    const events = await rt.sessionEvents();
    const contextId = contextOf(events, agent.name);
    const request = this.request({
      messageId: messageIdOf(rt),
      parts: messagePartsOf(events, agent.name, rt.branch),
      ...(contextId ? { contextId } : {}),
    });
    await rt.fault('before-remote-send');
    await this.dispatch(request, signal, async () => undefined);
  }

  /**
   * Sends a message (streaming when the remote streams) and follows the task; `accepted` runs once the remote took
   * the message (its first answer), before the task is followed further.
   */
  private async dispatch(
    request: SendMessageRequest,
    signal: AbortSignal,
    accepted: () => Promise<void>,
  ): Promise<void> {
    const { rt } = this;
    const { client, streaming } = this.connection as A2aConnection;
    if (streaming) {
      const stream = client.sendMessageStream(request, { signal });
      // The lease check is the last thing before the request leaves (ARCHITECTURE "Zombie worker").
      const first = await rt.sendLeased(() => stream.next());
      let taken = false;
      await this.consume(stream, {
        first,
        accepted: async () => {
          if (taken) return;
          taken = true;
          await accepted();
        },
      });
      return;
    }
    const result = await rt.sendLeased(() => client.sendMessage(request, { signal }));
    const known = this.task.taskId;
    if ('status' in result) this.task.applyTask(result);
    else this.task.directAnswer = result;
    if (!known && this.task.taskId) await this.remember();
    await accepted();
  }

  /** Whether the task settled: ended, or asks a question we have not just answered. */
  private settled(): boolean {
    const { task } = this;
    if (!task.settled) return false;
    return !(asksInput(task.state) && questionIdOf(task) === this.forwardedFor);
  }

  /** Forwards our user's answer to the remote's open question, if the node paused for it and the answer came. */
  private async forwardAnswer(signal: AbortSignal): Promise<void> {
    const { rt, agent, task } = this;
    if (!asksInput(task.state)) return;
    const open = openRequest(rt.journal, agent.name);
    // A question asked since (or none asked yet): the remote moved on, or the node pauses for it below.
    if (!open || open.questionId !== questionIdOf(task)) return;
    const answer = answerOf(rt.journal, open.callId);
    if (!answer) return;
    this.forwardedFor = open.questionId;
    const request = this.request({
      messageId: `${rt.invocationId}:${rt.nodePath}:${open.callId}`,
      parts: answerParts(answer),
      taskId: task.taskId as string,
      ...(task.contextId ? { contextId: task.contextId } : {}),
    });
    await this.dispatch(request, signal, async () => {
      // Crash before this → the next attempt sees the task still asking the same question and forwards again.
      await rt.emit({
        author: agent.name,
        actions: {
          stateDelta: {},
          artifactDelta: {},
          agentState: { remoteTask: this.markerTask(), remoteAnswered: open.callId },
        },
      });
    });
  }

  private markerTask(): TaskMarker['remoteTask'] {
    return { taskId: this.task.taskId ?? '', contextId: this.task.contextId ?? '' };
  }

  /** A non-blocking send of `message`. */
  private request(message: Parameters<typeof userMessage>[0]): SendMessageRequest {
    return {
      tenant: '',
      message: userMessage(message),
      configuration: {
        acceptedOutputModes: ['text/plain', 'application/json'],
        taskPushNotificationConfig: undefined,
        // Not blocking: the task id comes back at once, and is stored before we wait for the work.
        returnImmediately: true,
      },
      metadata: undefined,
    };
  }

  /**
   * Follows the task's stream (`tasks/resubscribe`) until it settles, the stream ends, or the stream stays quiet for
   * {@link QUIET_STREAM_MS}: the caller then reads the task (`tasks/get`). A remote may keep a resubscribe open
   * forever: an A2A 0.3 server (`@a2a-js/sdk` 0.3.x) that ends the task while the resubscribe attaches attaches it
   * to the task's spent event bus, and the stream never sends again.
   */
  private async resubscribe(id: string, signal: AbortSignal): Promise<void> {
    const quiet = new AbortController();
    const timer = setTimeout(() => quiet.abort(), QUIET_STREAM_MS);
    const both = AbortSignal.any([signal, quiet.signal]);
    try {
      const { client } = this.connection as A2aConnection;
      const stream = client.resubscribeTask({ tenant: '', id }, { signal: both });
      await this.consume(stream, { onEvent: () => timer.refresh() });
    } catch (err) {
      // The task may have ended between our read and the resubscribe (a remote refuses to follow an ended task),
      // or the stream went quiet: the next read says.
      if (signal.aborted || isControlFlow(err)) throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Follows a stream until the task settles (or the stream ends), storing the task id when it first shows. */
  private async consume(
    stream: AsyncGenerator<StreamResponse, void, undefined>,
    options: {
      /** The stream's first result, already read. */
      first?: IteratorResult<StreamResponse, void>;
      /** Runs after each event once the task id is stored (the remote took the message). */
      accepted?: () => Promise<void>;
      /** Runs as each event comes. */
      onEvent?: () => void;
    } = {},
  ): Promise<void> {
    const { first, accepted, onEvent } = options;
    try {
      for (let next = first ?? (await stream.next()); !next.done; next = await stream.next()) {
        onEvent?.();
        const known = this.task.taskId;
        const text = this.task.applyStream(next.value);
        if (!known && this.task.taskId) await this.remember();
        await accepted?.();
        if (this.settled()) return;
        if (text) this.rt.publishPartial({ role: 'model', parts: [{ text }] });
      }
    } finally {
      await stream.return(undefined).catch(() => undefined);
    }
  }

  /** Stores the task id as an event of the node: from now on a re-run follows this task instead of sending. */
  private async remember(): Promise<void> {
    // Crash here → the message reached the remote but its task id is not ours: the next attempt sends it again
    // under the same message id (an agentloom remote answers with the same task; others may start a second one).
    await this.rt.fault('before-remote-task');
    const marker: TaskMarker = {
      remoteTask: { taskId: this.task.taskId as string, contextId: this.task.contextId ?? '' },
    };
    await this.rt.emit({
      author: this.agent.name,
      actions: { stateDelta: {}, artifactDelta: {}, agentState: { ...marker } },
    });
    // Crash here → the next attempt finds the task id stored and follows the task: the message is not sent again.
    await this.rt.fault('after-remote-task');
  }

  /** Cancels the remote task when our run was cancelled or ran out of time (best effort: we are stopping). */
  private cancelRemote(reason: unknown): void {
    const id = this.task.taskId;
    if (!id || !this.connection || this.task.settled || !stopsRemote(reason)) return;
    this.connection.client.cancelTask({ tenant: '', id, metadata: undefined }).catch(() => undefined);
  }

  /** Stores how the task ended as the node's last event and returns the node's outcome. */
  async end(): Promise<LeafOutcome> {
    const { task, agent, rt } = this;
    const remoteTask = this.markerTask();
    if (!task.directAnswer && asksInput(task.state)) return this.pause();
    if (task.directAnswer || task.state === TaskState.TASK_STATE_COMPLETED) {
      const text = task.outputText();
      await rt.emitDeferred({
        author: agent.name,
        content: { role: 'model', parts: [{ text }] },
        actions: {
          stateDelta: agent.outputKey ? { [agent.outputKey]: text } : {},
          artifactDelta: {},
          agentState: { remoteTask, remoteEnded: 'completed' },
        },
      });
      return { status: 'completed', output: text };
    }
    const message = this.failureMessage();
    await rt.emitDeferred({
      author: agent.name,
      errorCode: 'REMOTE_AGENT',
      errorMessage: message,
      actions: { stateDelta: {}, artifactDelta: {}, agentState: { remoteTask, remoteEnded: 'failed' } },
    });
    return {
      status: 'failed',
      error: {
        code: 'REMOTE_AGENT',
        message,
        details: { taskId: remoteTask.taskId, state: TaskState[task.state] },
      },
    };
  }

  private failureMessage(): string {
    const { task, agent } = this;
    const said = task.statusText() || 'no reason given';
    switch (task.state) {
      case TaskState.TASK_STATE_CANCELED:
        return `remote agent ${agent.name}: its task was cancelled by the remote: ${said}`;
      case TaskState.TASK_STATE_REJECTED:
        return `remote agent ${agent.name} rejected the task: ${said}`;
      default:
        return `remote agent ${agent.name} failed: ${said}`;
    }
  }

  /**
   * Pauses the node with the remote's question: asked once (the request event commits with the pause), asked
   * again under the same call id when the node re-runs before the answer came.
   */
  private async pause(): Promise<LeafOutcome> {
    const { rt, agent, task } = this;
    const questionId = questionIdOf(task);
    const open = openRequest(rt.journal, agent.name);
    if (open && open.questionId === questionId && !answerOf(rt.journal, open.callId)) {
      return {
        status: 'paused',
        requests: [pauseRequestOf(task, open.callId, agent.name, rt.withdrawnCalls)],
      };
    }
    const callId = newId('remote_input');
    const request = pauseRequestOf(task, callId, agent.name);
    await rt.emitDeferred({
      author: agent.name,
      content: {
        role: 'model',
        parts: [{ functionCall: { id: callId, name: REMOTE_INPUT, args: request.args } }],
      },
      longRunningToolIds: [callId],
      actions: {
        stateDelta: {},
        artifactDelta: {},
        agentState: { remoteTask: this.markerTask(), remoteInput: { callId, questionId } },
      },
    });
    return { status: 'paused', requests: [request] };
  }
}
