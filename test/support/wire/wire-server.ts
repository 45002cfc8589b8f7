/**
 * A scripted HTTP server for model wire tests: it answers each request with the next reply of its queue (JSON,
 * server-sent events, a dropped connection, or no answer at all), records every request (path, query, headers,
 * parsed JSON body) and whether the client went away before it was answered (a cancelled call).
 *
 * The provider flavours (openai-wire.ts, anthropic-wire.ts, gemini-wire.ts) add reply builders in each wire format. They serve
 * in-process tests and, started in the test process, real engine processes (`agentloom dev`, SIGKILL tests)
 * pointed at `url` by their base-URL settings; `fallback` answers when the queue is empty.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the server received. */
export interface RecordedRequest {
  method: string;
  /** The path without the query, e.g. '/v1/chat/completions'. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The JSON body ({} when empty). */
  body: Record<string, unknown>;
  /** Set when the client closed the connection before the server had finished answering (a cancelled call). */
  closedBeforeAnswer: boolean;
  /** When the request arrived (Date.now()). */
  at: number;
}

/** One server-sent event: `event: <event>` (when given) and `data: <data>`. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** What the server answers to one request. */
export type WireReply =
  | { kind: 'json'; status?: number; headers?: Record<string, string>; body: unknown; delayMs?: number }
  | {
      kind: 'sse';
      events: SseEvent[];
      headers?: Record<string, string>;
      delayMs?: number;
      /** Pause between events, in ms (lets a test watch partials arrive). Default 0. */
      intervalMs?: number;
      /** Leave the stream open after the last event (a stream cut by a crash). Default false. */
      keepOpen?: boolean;
    }
  /** Destroys the connection without answering (a network failure). */
  | { kind: 'drop' }
  /** Never answers; the request stays open until the client goes away or the server closes. */
  | { kind: 'hang' };

/** Options of {@link startWireServer}. */
export interface WireServerOptions {
  /** The answer when no reply is queued. Default: the flavour's "no reply queued" error (not retried). */
  fallback?: (request: RecordedRequest) => WireReply;
  /** Default 127.0.0.1 and a free port. */
  host?: string;
  port?: number;
}

/** A running scripted server. */
export interface ScriptedWireServer {
  /** e.g. 'http://127.0.0.1:40123' (no trailing slash). */
  readonly url: string;
  /** Every request received, oldest first. */
  readonly requests: RecordedRequest[];
  /** How many requests were received. */
  readonly count: number;
  /** How many queued replies are left. */
  readonly pending: number;
  /** Queues replies, answered in order. */
  reply(...replies: WireReply[]): void;
  /** Forgets the recorded requests and the queued replies. */
  reset(): void;
  close(): Promise<void>;
}

/** Starts a scripted server; `noReply` is the flavour's answer when the queue is empty and no fallback is given. */
export async function startWireServer(
  options: WireServerOptions & { noReply: (request: RecordedRequest) => WireReply },
): Promise<ScriptedWireServer> {
  const requests: RecordedRequest[] = [];
  const replies: WireReply[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const raw = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
        closedBeforeAnswer: false,
        at: Date.now(),
      };
      requests.push(recorded);
      const reply = replies.shift() ?? (options.fallback ?? options.noReply)(recorded);
      res.on('close', () => {
        if (!res.writableEnded && reply.kind !== 'drop') recorded.closedBeforeAnswer = true;
      });
      void answer(res, reply);
    });
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    requests,
    get count() {
      return requests.length;
    },
    get pending() {
      return replies.length;
    },
    reply: (...more) => void replies.push(...more),
    reset: () => {
      requests.length = 0;
      replies.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The start function of a provider flavour: {@link startWireServer} answering `noReply` (the provider's "no reply
 * queued" error, in its wire format) when the queue is empty and the caller gives no fallback.
 */
export function wireFlavour(
  noReply: (request: RecordedRequest) => WireReply,
): (options?: WireServerOptions) => Promise<ScriptedWireServer> {
  return (options = {}) => startWireServer({ ...options, noReply });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function answer(res: ServerResponse, reply: WireReply): Promise<void> {
  if (reply.kind === 'drop') {
    res.socket?.destroy();
    return;
  }
  if (reply.kind === 'hang') return;
  if (reply.delayMs) await pause(reply.delayMs);
  if (res.destroyed) return;
  if (reply.kind === 'json') {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(reply.body));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...reply.headers });
  for (const event of reply.events) {
    if (res.destroyed) return;
    res.write(`${event.event === undefined ? '' : `event: ${event.event}\n`}data: ${event.data}\n\n`);
    if (reply.intervalMs) await pause(reply.intervalMs);
  }
  if (!reply.keepOpen) res.end();
}
