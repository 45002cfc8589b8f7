/**
 * The console's client of the HTTP API: JSON requests with the tab's API key (`Authorization: Bearer`) and the
 * name the person gave for the audit trail (`X-Agentloom-Actor`, recorded only by a server without keys), errors in
 * the API's shape, and the live event stream read with fetch (EventSource cannot send a key), resumed after a
 * dropped connection from the last event seen.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ApiErrorBody, ApiEvent } from './types';

const KEY_ITEM = 'agentloom.apiKey';
const ACTOR_ITEM = 'agentloom.actor';

/** A failed request: the API's error code and message, and the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The key of this tab (kept for the tab's session only). */
export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_ITEM) ?? undefined;
}

export function storeKey(key: string | undefined): void {
  if (key) sessionStorage.setItem(KEY_ITEM, key);
  else sessionStorage.removeItem(KEY_ITEM);
}

/** The name this browser answers under when the server has no keys. */
export function storedActor(): string {
  return localStorage.getItem(ACTOR_ITEM) ?? '';
}

export function storeActor(name: string): void {
  if (name.trim()) localStorage.setItem(ACTOR_ITEM, name.trim());
  else localStorage.removeItem(ACTOR_ITEM);
}

function headers(extra: Record<string, string> = {}, key = storedKey()): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json', ...extra };
  if (key) h.authorization = `Bearer ${key}`;
  const actor = storedActor();
  if (actor) h['x-agentloom-actor'] = actor;
  return h;
}

async function failure(response: Response): Promise<ApiError> {
  let body: ApiErrorBody | undefined;
  try {
    body = (await response.json()) as ApiErrorBody;
  } catch {
    body = undefined;
  }
  return new ApiError(
    response.status,
    body?.error?.code ?? `HTTP_${response.status}`,
    body?.error?.message ?? `${response.status} ${response.statusText}`,
    body?.error?.details ?? {},
  );
}

/** GETs JSON; throws {@link ApiError}. `key` overrides the tab's key (the sign-in check). */
export async function getJson<T>(path: string, key?: string): Promise<T> {
  const response = await fetch(path, { headers: headers({}, key ?? storedKey()) });
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

/** POSTs a JSON body; throws {@link ApiError}. */
export async function postJson<T>(path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method: 'POST',
    headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

/** What a live event stream reports. */
export interface StreamHandlers {
  onEvent(event: ApiEvent): void;
  /** `event: status` (paused, running) and `event: end` (the run ended; the stream is over). */
  onStatus(status: string, ended: boolean): void;
  /** Connected (true) or lost and retrying (false). */
  onConnection(open: boolean, error?: ApiError): void;
}

/**
 * Follows an invocation's events from after `after` until the run ends or `signal` aborts, reconnecting (from the
 * last seq seen) when the connection drops. A 4xx other than 429 stops it: retrying would not help.
 */
export async function followEvents(
  invocationId: string,
  after: number,
  handlers: StreamHandlers,
  signal: AbortSignal,
): Promise<void> {
  let lastSeq = after;
  let ended = false;
  let delayMs = 500;
  while (!ended && !signal.aborted) {
    try {
      const response = await fetch(
        `/v1/invocations/${encodeURIComponent(invocationId)}/events?after=${lastSeq}&partial=0`,
        { headers: headers({ accept: 'text/event-stream' }), signal },
      );
      if (response.status === 204) {
        handlers.onStatus('', true);
        return;
      }
      if (!response.ok || !response.body) {
        const error = await failure(response);
        handlers.onConnection(false, error);
        if (response.status >= 400 && response.status < 500 && response.status !== 429) return;
        throw error;
      }
      handlers.onConnection(true);
      delayMs = 500;
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          if (message.event === 'status' || message.event === 'end') {
            const { status } = JSON.parse(message.data) as { status: string };
            if (message.event === 'end') ended = true;
            handlers.onStatus(status, message.event === 'end');
            return;
          }
          const event = JSON.parse(message.data) as ApiEvent;
          if (event.seq > lastSeq) lastSeq = event.seq;
          handlers.onEvent(event);
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      if (signal.aborted) return;
      handlers.onConnection(false);
    }
    if (!ended && !signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 5_000);
    }
  }
}
