/**
 * A small A2A v0.3 agent built on `@a2a-js/sdk` 0.3.x's own server (installed as `a2a-sdk-v03`: DefaultRequestHandler,
 * an AgentExecutor, the JSON-RPC transport handler over node:http, served by `a2a-sdk-http.ts`): what most
 * deployed A2A agents (kagent's, ADK's `to_a2a`) still are to RemoteA2aAgent. It answers every message with `reply`,
 * held until `hold` resolves, and counts the messages it received, the resubscribes and the cancels. `holdFinalSave`
 * stands for a slow task store (a database's): the task's end is stored only once it resolves.
 */
import type { AgentCard, Message, Task, TaskStatusUpdateEvent } from 'a2a-sdk-v03';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from 'a2a-sdk-v03/server';
import { serveSdkHttp } from './a2a-sdk-http.js';

/** The running server and what it saw. */
export interface SdkV03Agent {
  /** Its base URL (the card at `/.well-known/agent-card.json`, JSON-RPC at `/`). */
  url: string;
  /** The texts of the messages it received, in order. */
  received: string[];
  /** Ids of the tasks it started. */
  tasks: string[];
  /** Ids of the tasks a client cancelled. */
  cancelled: string[];
  /** Ids of the tasks whose execution ended (its last event published). */
  executed: string[];
  /** Ids of the tasks a client resubscribed to (`tasks/resubscribe`), in order. */
  resubscribed: string[];
  /** The state its task store holds for `taskId` (what `tasks/get` answers), if it knows the task. */
  stateOf(taskId: string): Promise<string | undefined>;
  close(): Promise<void>;
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    kind: 'message',
    messageId: `agent-${taskId}-${Math.random().toString(36).slice(2)}`,
    role: 'agent',
    parts: [{ kind: 'text', text }],
    taskId,
    contextId,
  };
}

class HeldExecutor implements AgentExecutor {
  constructor(
    private readonly seen: SdkV03Agent,
    private readonly reply: string,
    private readonly hold: Promise<void>,
  ) {}

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId, userMessage } = request;
    this.seen.received.push(
      userMessage.parts.map((p) => (p.kind === 'text' ? p.text : JSON.stringify(p))).join('\n'),
    );
    this.seen.tasks.push(taskId);
    const status = (
      state: TaskStatusUpdateEvent['status']['state'],
      final: boolean,
    ): TaskStatusUpdateEvent => ({
      kind: 'status-update',
      taskId,
      contextId,
      status: { state, timestamp: new Date().toISOString() },
      final,
    });
    bus.publish({
      kind: 'task',
      id: taskId,
      contextId,
      status: { state: 'submitted', timestamp: new Date().toISOString() },
      history: [userMessage],
    });
    bus.publish(status('working', false));
    await this.hold;
    bus.publish({
      kind: 'artifact-update',
      taskId,
      contextId,
      artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: this.reply }] },
      lastChunk: true,
    });
    bus.publish({
      ...status('completed', true),
      status: { state: 'completed', message: agentMessage('done', taskId, contextId) },
    });
    bus.finished();
    this.seen.executed.push(taskId);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.seen.cancelled.push(taskId);
    bus.publish({
      kind: 'status-update',
      taskId,
      contextId: '',
      status: { state: 'canceled', timestamp: new Date().toISOString() },
      final: true,
    });
    bus.finished();
  };
}

const FINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** An in-memory task store whose save of an ended task waits for `hold`. */
class SlowFinalStore extends InMemoryTaskStore {
  constructor(private readonly hold: Promise<void>) {
    super();
  }

  override async save(task: Task): Promise<void> {
    if (FINAL.has(task.status.state)) await this.hold;
    await super.save(task);
  }
}

/** Starts the agent (streaming, as its card says) on a free port of 127.0.0.1. */
export async function startSdkV03Agent(options: {
  reply: string;
  hold: Promise<void>;
  holdFinalSave?: Promise<void>;
}): Promise<SdkV03Agent> {
  const store = options.holdFinalSave ? new SlowFinalStore(options.holdFinalSave) : new InMemoryTaskStore();
  const seen: SdkV03Agent = {
    url: '',
    received: [],
    tasks: [],
    cancelled: [],
    executed: [],
    resubscribed: [],
    stateOf: async (taskId) => (await store.load(taskId))?.status.state,
    close: async () => undefined,
  };
  const built: { card?: AgentCard; transport?: JsonRpcTransportHandler } = {};
  const served = await serveSdkHttp({
    card: () => built.card,
    handle: (body) => {
      const params = body.params as { id?: string } | undefined;
      if (body.method === 'tasks/resubscribe') seen.resubscribed.push(String(params?.id));
      return (built.transport as JsonRpcTransportHandler).handle(body);
    },
    sseEvent: (event) => `data: ${JSON.stringify(event)}\n\n`,
  });
  seen.url = served.url;
  seen.close = served.close;
  const card: AgentCard = {
    name: 'sdk_v03_agent',
    description: 'an agent on the A2A SDK 0.3 server',
    url: seen.url,
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  };
  built.card = card;
  built.transport = new JsonRpcTransportHandler(
    new DefaultRequestHandler(card, store, new HeldExecutor(seen, options.reply, options.hold)),
  );
  return seen;
}
