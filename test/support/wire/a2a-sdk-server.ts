/**
 * A small A2A agent built on `@a2a-js/sdk`'s own server (DefaultRequestHandler, an AgentExecutor, the JSON-RPC
 * transport handler over node:http, served by `a2a-sdk-http.ts`): what a remote
 * agent of another vendor looks like to RemoteA2aAgent. It counts the messages it received and the cancels, and
 * answers by `behave(text)`: a reply, a failure, a reply held until the test opens its gate, or a question.
 */
import { AgentCard, formatSSEEvent, Role, TaskState, type Message, type Part } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { serveSdkHttp } from './a2a-sdk-http.js';

/** How the agent answers a message. */
export type Behaviour =
  | { reply: string; hold?: Promise<void> }
  | { fail: string; hold?: Promise<void> }
  /** Asks `ask` (input-required), then answers `answered: <the answer's text, or its data as JSON>`. */
  | { ask: string };

/** The running server and what it saw. */
export interface SdkAgent {
  /** Its base URL (the card at `/.well-known/agent-card.json`, JSON-RPC at `/`). */
  url: string;
  /** The texts of the messages it received, in order. */
  received: string[];
  /** The message ids it received. */
  messageIds: string[];
  /** Ids of the tasks a client cancelled. */
  cancelled: string[];
  /** Ids of the tasks it started. */
  tasks: string[];
  close(): Promise<void>;
}

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

function agentMessage(value: string, taskId: string, contextId: string): Message {
  return {
    messageId: `agent-${taskId}-${Math.random().toString(36).slice(2)}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [text(value)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

class ScriptedExecutor implements AgentExecutor {
  private readonly stops = new Map<string, () => void>();

  constructor(
    private readonly seen: SdkAgent,
    private readonly behave: (text: string) => Behaviour,
  ) {}

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = request;
    const message = request.userMessage;
    const said = message.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : JSON.stringify(p.content?.value)))
      .join('\n');
    this.seen.received.push(said);
    this.seen.messageIds.push(message.messageId);
    this.seen.tasks.push(taskId);
    const status = (state: TaskState, note?: string) =>
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state,
          message: note ? agentMessage(note, taskId, contextId) : undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      });
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [message],
        metadata: undefined,
      }),
    );
    bus.publish(status(TaskState.TASK_STATE_WORKING, 'working on it'));
    // A follow-up message of a task that asked: the answer.
    const behaviour: Behaviour = request.task ? { reply: `answered: ${said}` } : this.behave(said);
    if ('ask' in behaviour) {
      bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, behaviour.ask));
      bus.finished();
      return;
    }
    let stopped = false;
    await Promise.race([
      behaviour.hold ?? Promise.resolve(),
      new Promise<void>((resolve) => this.stops.set(taskId, () => ((stopped = true), resolve()))),
    ]);
    this.stops.delete(taskId);
    if (stopped) return;
    if (behaviour.hold) bus.publish(status(TaskState.TASK_STATE_WORKING, 'almost done'));
    if ('fail' in behaviour) {
      bus.publish(status(TaskState.TASK_STATE_FAILED, behaviour.fail));
    } else {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'answer',
            name: 'answer',
            description: '',
            parts: [text(behaviour.reply)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.seen.cancelled.push(taskId);
    this.stops.get(taskId)?.();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
    bus.finished();
  };
}

/** Starts the agent on a free port of 127.0.0.1. `streaming` is what its card says (default true). */
export async function startSdkAgent(
  behave: (text: string) => Behaviour,
  options: { streaming?: boolean; name?: string } = {},
): Promise<SdkAgent> {
  const seen: SdkAgent = {
    url: '',
    received: [],
    messageIds: [],
    cancelled: [],
    tasks: [],
    close: async () => undefined,
  };
  // Built once the port is known (the card names the URL); the server answers nothing before.
  const built: { card?: AgentCard; transport?: JsonRpcTransportHandler } = {};
  const executor = new ScriptedExecutor(seen, behave);
  const served = await serveSdkHttp({
    card: () => AgentCard.toJSON(built.card as AgentCard),
    handle: (body, request) => {
      const header = request.headers['a2a-version'];
      const context = defaultServerCallContextBuilder({
        headers: request.headers,
        extensions: [],
        user: new UnauthenticatedUser(),
        ...(typeof header === 'string' ? { requestedVersion: header } : {}),
      });
      return (built.transport as JsonRpcTransportHandler).handle(body, context);
    },
    sseEvent: (event) => formatSSEEvent(event as Parameters<typeof formatSSEEvent>[0]),
  });
  seen.url = served.url;
  seen.close = served.close;
  const card: AgentCard = {
    name: options.name ?? 'sdk_agent',
    description: 'an agent on the A2A SDK server',
    supportedInterfaces: [{ url: seen.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: options.streaming ?? true,
      pushNotifications: false,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  built.card = card;
  built.transport = new JsonRpcTransportHandler(
    new DefaultRequestHandler(card, new InMemoryTaskStore(), executor),
  );
  return seen;
}
