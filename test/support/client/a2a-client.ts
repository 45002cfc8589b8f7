/** `@a2a-js/sdk`'s 1.x client as the A2A tests drive it, and readers of what it answers. */
import { expect } from 'vitest';
import { SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';

/** The SDK's client for an app's endpoint (card fetched from `cardBase`), with headers on every request. */
export async function clientFor(cardBase: string, headers: Record<string, string> = {}): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), ...headers },
    });
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(cardBase.endsWith('/') ? cardBase : `${cardBase}/`);
}

/** A v1.0 SendMessage request: a text, or one DataPart (`data`); blocking unless `returnImmediately`. */
export function send(
  text: string,
  options: { contextId?: string; taskId?: string; returnImmediately?: boolean; data?: unknown } = {},
): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: `m-${Math.random().toString(36).slice(2)}`,
      role: 'ROLE_USER',
      parts: options.data ? [{ data: options.data }] : [{ text }],
      ...(options.contextId ? { contextId: options.contextId } : {}),
      ...(options.taskId ? { taskId: options.taskId } : {}),
    },
    configuration: { returnImmediately: options.returnImmediately ?? false },
  });
}

/** The result of a send, which must be a task. */
export function asTask(result: unknown): Task {
  expect(result).toHaveProperty('status');
  return result as Task;
}

/** The texts of a task's artifacts. */
export function textsOf(task: Task | undefined): string[] {
  return (task?.artifacts ?? []).flatMap((a) =>
    a.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])),
  );
}

/** The events of a stream, up to the first `until` accepts. */
export async function collect(
  stream: AsyncIterable<StreamResponse>,
  until?: (e: StreamResponse) => boolean,
): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) {
    events.push(event);
    if (until?.(event)) break;
  }
  return events;
}

/** The JSON-RPC results of an SSE body (comments skipped), read only by assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
export function sseResults(text: string): any[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '' && !block.startsWith(':'))
    .map((block) => (JSON.parse(block.replace(/^data: /, '')) as { result: unknown }).result);
}

/**
 * A v0.3 JSON-RPC request (`kind`-tagged shapes, as 0.3 clients send them) carrying one user text:
 * `message/send` (blocking) or `message/stream`.
 */
export function v03Request(
  method: 'message/send' | 'message/stream',
  text: string,
  { id = 1, messageId }: { id?: number; messageId: string },
) {
  return {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      message: { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text }] },
      ...(method === 'message/send' ? { configuration: { blocking: true } } : {}),
    },
  };
}
