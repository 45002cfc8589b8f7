/**
 * The A2A client side: the only place that imports `@a2a-js/sdk/client` (a dependency-cruiser driver rule). A
 * remote agent's card (fetched from a URL or given), the SDK client over JSON-RPC for it (A2A v1.0, and v0.3 for a
 * card of that version, kagent's and ADK's included), with the agent's headers on every request. The client module
 * is imported by the first connection: a process with no remote agent does not load it.
 */
import { AgentCard, type Message, type Part } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { Role } from '@a2a-js/sdk';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';

/** Where a remote agent's card comes from: its URL (the card itself, or the agent's base URL), or the card. */
export type AgentCardSource = string | AgentCard | Record<string, unknown>;

/** A remote agent reached through its card. */
export interface A2aConnection {
  readonly card: AgentCard;
  readonly client: Client;
  /** Whether the card says the agent streams (`message/stream`, `tasks/resubscribe`). */
  readonly streaming: boolean;
}

const WELL_KNOWN = '/.well-known/agent-card.json';

/** The card URL `source` names: a URL ending in `.json` is the card itself, any other the agent's base URL. */
export function cardUrlOf(source: string): string {
  const url = new URL(source);
  if (url.pathname.endsWith('.json')) return url.href;
  return `${url.href.replace(/\/+$/, '')}${WELL_KNOWN}`;
}

/** Connects to a remote agent: fetches (or normalises) its card and builds the SDK client for it. */
export async function connectA2a(
  source: AgentCardSource,
  headers: Readonly<Record<string, string>>,
): Promise<A2aConnection> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), ...headers },
    });
  const { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } =
    await import('@a2a-js/sdk/client');
  const legacyCompat = { enabled: true };
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat })],
    cardResolver: resolver,
  });
  const card =
    typeof source === 'string'
      ? await resolver.resolve(cardUrlOf(source), '')
      : resolver.normalizeAgentCard(isV1Card(source) ? AgentCard.toJSON(source) : source);
  const client = await factory.createFromAgentCard(card);
  return { card, client, streaming: card.capabilities?.streaming === true };
}

/** Whether `value` is already the SDK's v1.0 card (its `supportedInterfaces` and `capabilities` objects). */
function isV1Card(value: AgentCard | Record<string, unknown>): value is AgentCard {
  return Array.isArray((value as { supportedInterfaces?: unknown }).supportedInterfaces);
}

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

/**
 * Our outgoing user message: `contextId` continues the remote conversation of an earlier turn, `taskId` answers a
 * task that asked for input.
 */
export function userMessage(options: {
  messageId: string;
  parts: Part[];
  contextId?: string;
  taskId?: string;
}): Message {
  return {
    messageId: options.messageId,
    contextId: options.contextId ?? '',
    taskId: options.taskId ?? '',
    role: Role.ROLE_USER,
    parts: options.parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The text parts of parts, joined. */
export function textOfParts(parts: readonly Part[] | undefined): string {
  return (parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('');
}

/** A data part (a JSON object). */
export function dataPart(data: Record<string, unknown>): Part {
  return { content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' };
}

/** The data parts' objects. */
export function dataOfParts(parts: readonly Part[] | undefined): unknown[] {
  return (parts ?? []).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value as unknown] : []));
}

/**
 * Whether a cancel was refused because there is nothing left to stop: the task ended (-32002) or the remote no
 * longer knows it (-32001).
 */
export function isNotCancelable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    err instanceof TaskNotCancelableError ||
    err instanceof TaskNotFoundError ||
    code === -32002 ||
    code === -32001
  );
}
