/**
 * One app as an A2A agent: the SDK's request-handler port (`A2ARequestHandler`) implemented over the engine. The
 * invocation IS the task — every answer is read from the engine's tables (state, events, pending calls), never
 * from memory — so a task outlives the process that started it and any API process serves it: a stream dropped
 * here resumes (`SubscribeToTask`) there. The SDK's JSON-RPC transport handlers (v1.0 and v0.3) parse, dispatch
 * and serialize around it.
 */
import { Role, TaskState, type AgentCard, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import type {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SubscribeToTaskRequest,
} from '@a2a-js/sdk';
import {
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { hasErrorCode } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import type { Engine } from '../../engine/engine.js';
import type { InvocationView } from '../../engine/runs/views.js';
import { listInvocations } from '../../store/repos/invocations.js';
import { untilAborted } from '../http/event-stream.js';
import { answersOf, contentOf, type CallAnswer } from './a2a-answers.js';
import {
  historyOf,
  invocationStatusOf,
  isTerminal,
  outputArtifactOf,
  statusMessageOf,
  taskMessage,
  taskOf,
  taskStateOf,
  textPart,
} from './a2a-tasks.js';

/** What one request's handler knows: the engine, the app, the caller and the app's card. */
export interface A2aHandlerOptions {
  engine: Engine;
  app: string;
  card: AgentCard;
  /** The key's name (recorded as `createdBy` / `answeredBy`, and the user of new sessions); undefined: no keys. */
  actor: string | undefined;
  /** The request's valid `traceparent`, if any: the run's trace parent. */
  traceparent?: string | undefined;
  /** Aborted when the client goes away or the server closes: a stream stops following (the run goes on). */
  signal: AbortSignal;
}

/** Where a stream starts: the invocation and the seq after which its events are new. */
interface StreamStart {
  view: InvocationView;
  afterSeq: number;
}

/** The SDK's request-handler port over the engine, for one app. */
export class EngineA2aHandler implements A2ARequestHandler {
  constructor(private readonly options: A2aHandlerOptions) {}

  private get engine(): Engine {
    return this.options.engine;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.options.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError('this agent has no extended agent card');
  }

  /** The app's invocation with this id; another app's (or none) is "task not found" (-32001). */
  private async invocation(taskId: string): Promise<InvocationView> {
    try {
      const view = await this.engine.get(taskId);
      if (view.app === this.options.app) return view;
    } catch (err) {
      if (!hasErrorCode(err, 'NOT_FOUND')) throw err;
    }
    throw new TaskNotFoundError(`task ${taskId} does not exist`);
  }

  private async events(view: InvocationView): Promise<Event[]> {
    const events: Event[] = [];
    for await (const event of this.engine.events(view.id)) events.push(event);
    return events;
  }

  private async task(view: InvocationView, historyLength?: number): Promise<Task> {
    return taskOf(view, historyLength === 0 ? [] : await this.events(view), historyLength);
  }

  /** Starts a turn: answers the paused calls of `message.taskId`, or enqueues the text in `contextId`'s session. */
  private async start(params: SendMessageRequest): Promise<StreamStart> {
    const message = params.message;
    if (!message?.messageId) throw new RequestMalformedError('message.messageId is required');
    if (message.taskId) return this.answer(message);
    const input = contentOf(message);
    const session = message.contextId ? await this.engine.store.getSession(message.contextId) : undefined;
    if (session && session.app !== this.options.app) {
      throw new RequestMalformedError(`contextId ${message.contextId} is a conversation of another agent`);
    }
    const userId = session?.userId ?? this.options.actor ?? 'a2a';
    const { invocationId } = await this.engine.enqueue({
      app: this.options.app,
      userId,
      input,
      // A message sent again (a client that crashed before it stored the task id re-sends the same messageId) is
      // the same task, not a second run. Per user, so that no caller reaches another's task by guessing an id.
      idempotencyKey: `a2a:${userId}:${message.messageId}`,
      ...(message.contextId ? { sessionId: message.contextId } : {}),
      createdBy: this.options.actor,
      ...(this.options.traceparent ? { traceparent: this.options.traceparent } : {}),
    });
    return { view: await this.engine.get(invocationId), afterSeq: session?.lastSeq ?? 0 };
  }

  /** Answers the paused calls of the message's task; the same task (invocation) resumes. */
  private async answer(message: Message): Promise<StreamStart> {
    const view = await this.invocation(message.taskId);
    if (message.contextId && message.contextId !== view.sessionId) {
      throw new RequestMalformedError(`contextId ${message.contextId} is not the context of task ${view.id}`);
    }
    if (isTerminal(view.status)) {
      throw new UnsupportedOperationError(
        `task ${view.id} has ended (${view.status}); send a message without taskId`,
      );
    }
    const answers = answersOf(message);
    if (view.status !== 'paused' || answers.length === 0) {
      throw new UnsupportedOperationError(
        view.status === 'paused'
          ? `task ${view.id} waits for input: answer each call of its status message with a DataPart {callId, confirmed} or {callId, response}`
          : `task ${view.id} is ${view.status} and asks for no input; wait for it, or cancel it`,
      );
    }
    // Every answer checked before the first is stored: a refused message answers nothing.
    const unknown = answers.find((answer) => !view.pending.some((call) => call.callId === answer.callId));
    if (unknown) {
      throw new RequestMalformedError(
        `task ${view.id} has no pending call ${unknown.callId}; pending: ${view.pending.map((c) => c.callId).join(', ')}`,
      );
    }
    const afterSeq = (await this.engine.store.getSession(view.sessionId))?.lastSeq ?? 0;
    for (const answer of answers) await this.respond(view, answer);
    return { view: await this.engine.get(view.id), afterSeq };
  }

  private async respond(view: InvocationView, answer: CallAnswer): Promise<void> {
    const response =
      'confirmed' in answer
        ? {
            confirmed: answer.confirmed,
            ...(answer.payload === undefined ? {} : { payload: answer.payload }),
          }
        : answer.response;
    try {
      await this.engine.respond({
        invocationId: view.id,
        functionResponses: [{ id: answer.callId, response }],
        by: this.options.actor,
      });
    } catch (err) {
      if (
        hasErrorCode(err, 'CONFLICT') ||
        hasErrorCode(err, 'VALIDATION') ||
        hasErrorCode(err, 'NOT_FOUND')
      ) {
        throw new RequestMalformedError(err instanceof Error ? err.message : String(err));
      }
      throw err;
    }
  }

  async sendMessage(params: SendMessageRequest): Promise<Task> {
    const { view } = await this.start(params);
    const historyLength = params.configuration?.historyLength;
    if (params.configuration?.returnImmediately === true) return this.task(view, historyLength);
    // Blocking: until the task completes, fails, is cancelled or asks for input.
    return this.task(await this.engine.wait(view.id), historyLength);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const start = await this.start(params);
    yield* this.follow(start, params.configuration?.historyLength);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return this.task(await this.invocation(params.id), params.historyLength);
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const view = await this.invocation(params.id);
    if (view.status === 'cancelled') return this.task(view);
    if (isTerminal(view.status))
      throw new TaskNotCancelableError(`task ${view.id} has ended (${view.status})`);
    return this.task(await this.engine.cancel(view.id));
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const view = await this.invocation(params.id);
    if (isTerminal(view.status)) {
      throw new UnsupportedOperationError(`task ${view.id} has ended (${view.status}); read it with GetTask`);
    }
    const afterSeq = (await this.engine.store.getSession(view.sessionId))?.lastSeq ?? 0;
    yield* this.follow({ view: await this.engine.get(view.id), afterSeq });
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? 50;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) {
      throw new RequestMalformedError('pageSize must be between 1 and 100');
    }
    const status = params.status ? invocationStatusOf(params.status) : undefined;
    if (params.status && !status) return { tasks: [], nextPageToken: '', pageSize, totalSize: 0 };
    const rows = await listInvocations(this.engine.store.db, {
      app: this.options.app,
      ...(status ? { status } : {}),
      limit: params.contextId ? 1000 : pageSize,
    });
    const chosen = rows
      .filter((row) => !params.contextId || row.sessionId === params.contextId)
      .slice(0, pageSize);
    const tasks: Task[] = [];
    for (const row of chosen)
      tasks.push(await this.task(await this.engine.get(row.id), params.historyLength ?? 0));
    return { tasks, nextPageToken: '', pageSize, totalSize: tasks.length };
  }

  /**
   * The task, then its events as status updates until it settles, then the output artifact and the final status
   * (completed, failed, canceled or input-required). Reads the engine's tables: any API process can serve it.
   */
  private async *follow(
    start: StreamStart,
    historyLength?: number,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const { view, afterSeq } = start;
    yield { payload: { $case: 'task', value: await this.task(view, historyLength) } };
    const ids = { taskId: view.id, contextId: view.sessionId };
    let working = view.status === 'running';
    // A client gone (or the server closing) stops the wait for the next event at once, not at that event.
    const events = untilAborted(this.engine.events(view.id, { afterSeq, follow: true }), this.options.signal);
    for await (const event of events) {
      if (this.options.signal.aborted) return;
      if (event.invocationId !== view.id || event.author === 'user') continue;
      const [message] = historyOf(view, [event]);
      if (!message && working) continue;
      working = true;
      yield {
        payload: {
          $case: 'statusUpdate',
          value: {
            ...ids,
            status: {
              state: TaskState.TASK_STATE_WORKING,
              message,
              timestamp: new Date(event.timestamp).toISOString(),
            },
            metadata: { author: event.author, nodePath: event.nodePath },
          },
        },
      };
    }
    if (this.options.signal.aborted) return;
    const settled = await this.engine.get(view.id);
    const artifact = outputArtifactOf(settled);
    if (artifact) {
      yield {
        payload: {
          $case: 'artifactUpdate',
          value: { ...ids, artifact, append: false, lastChunk: true, metadata: {} },
        },
      };
    }
    const message =
      statusMessageOf(settled) ??
      taskMessage({
        id: `${view.id}-${settled.status}`,
        ...ids,
        role: Role.ROLE_AGENT,
        parts: [textPart(settled.status)],
      });
    yield {
      payload: {
        $case: 'statusUpdate',
        value: {
          ...ids,
          status: { state: taskStateOf(settled.status), message, timestamp: settled.updatedAt.toISOString() },
          metadata: {},
        },
      },
    };
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }
}
