/**
 * The HTTP client of the CLI's client commands (`run`, `status`, `events`, `approve`, …) against the API at `--url` /
 * `AGENTLOOM_URL` with `--api-key` / `AGENTLOOM_API_KEY`, every answer validated with the API's own zod schemas,
 * every failure an {@link ApiClientError} carrying the API's error code and message.
 *
 * Plain requests go through `node:http` (`node:https` for an https URL); only the event stream uses fetch. Node
 * loads fetch's implementation (undici) on first use: ~150 ms of a command's start on a 2.1 GHz core, half of what
 * a client command may take (`agentloom status` is meant to answer in 300 ms).
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import type * as z from 'zod';
import { loadEnv, type EnvConfig } from '../../config/env.js';
import {
  enqueueResultSchema,
  errorSchema,
  invocationPageSchema,
  eventListSchema,
  invocationSchema,
  nodeListSchema,
  type EnqueueBody,
  type InvocationJson,
} from '../../api/http/schemas.js';
import {
  diffSchema,
  forkResultSchema,
  replayResultSchema,
  type ForkBody,
  type ReplayJson,
} from '../../api/http/fork-schemas.js';
import {
  credentialListSchema,
  credentialsDeletedSchema,
  type CredentialJson,
} from '../../api/http/credential-schemas.js';
import { ApiClientError, UsageError } from '../terminal/cli-errors.js';

/** Where the API is when neither `--url` nor `AGENTLOOM_URL` says. */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

/** How long a plain request (not an event stream) may take unless {@link ApiClientOptions} say otherwise. */
const REQUEST_TIMEOUT_MS = 60_000;

/** Flags every client command takes (strings, as commander gives them). */
export interface ClientFlags {
  url?: string;
  apiKey?: string;
}

/** The resolved address and key of the API. */
export interface ClientConfig {
  /** Base URL without a trailing slash. */
  readonly url: string;
  readonly apiKey: string | undefined;
}

/** Resolves `--url` / `--api-key`, then `AGENTLOOM_URL` / `AGENTLOOM_API_KEY`, then the default URL. */
export function clientConfig(flags: ClientFlags, env: EnvConfig = loadEnv()): ClientConfig {
  const url = flags.url ?? env.AGENTLOOM_URL ?? DEFAULT_API_URL;
  if (!/^https?:\/\/[^\s/]+/.test(url) || !URL.canParse(url)) {
    throw new UsageError(
      `--url must be the http:// or https:// address of an agentloom API, e.g. ${DEFAULT_API_URL}; got ${JSON.stringify(url)}`,
    );
  }
  if (flags.apiKey !== undefined && flags.apiKey.trim() === '') {
    throw new UsageError('--api-key must not be empty: pass a key of AGENTLOOM_API_KEYS, or leave it out');
  }
  return Object.freeze({ url: url.replace(/\/+$/, ''), apiKey: flags.apiKey ?? env.AGENTLOOM_API_KEY });
}

/** A node of an invocation's tree as `GET /v1/invocations/:id/nodes` lists it. */
export type NodeJson = z.infer<typeof nodeListSchema>['nodes'][number];
/** A page of stored events. */
export type EventPage = z.infer<typeof eventListSchema>;
/** What `POST /v1/apps/:app/invocations` answers. */
export type EnqueueResult = z.infer<typeof enqueueResultSchema>;

/** Options of {@link ApiClient.openEventStream}. */
export interface EventStreamRequest {
  /** Only events after this seq (`?after=`). */
  after?: number;
  /** Resume after this seq (the `Last-Event-ID` header): an ended run with nothing newer answers 204. */
  lastEventId?: number;
  /** Include streamed partial events. */
  partial?: boolean;
  /**
   * `stay=1` / `stay=0`. Unset: the API's default, a stream open through pauses (a `status` event at each,
   * `end` once the run has ended); false: `end` at the first pause.
   */
  stay?: boolean;
  signal?: AbortSignal;
}

const SOCKET_CODES = /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|UND_ERR_\w+)$/;

/** The socket error code under a `fetch failed` TypeError, when there is one. */
function socketCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SOCKET_CODES.test(code)) return code;
  }
  return undefined;
}

/** A query string of the fields that are set. */
function queryOf(fields: Record<string, string | undefined>): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) query.set(name, value);
  return query;
}

/** Options of an {@link ApiClient}. */
export interface ApiClientOptions {
  /** How long a plain request (not an event stream) may take before it fails as TIMEOUT; default a minute. */
  requestTimeoutMs?: number;
}

/** A client of one agentloom API. */
export class ApiClient {
  private readonly requestTimeoutMs: number;

  constructor(
    readonly config: ClientConfig,
    options: ApiClientOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.config.apiKey ? { authorization: `Bearer ${this.config.apiKey}`, ...extra } : extra;
  }

  /** The failure of a request that got no answer: what to check, naming the URL. */
  private unreachable(err: unknown): ApiClientError {
    if ((err as Error).name === 'TimeoutError') {
      return new ApiClientError(
        'TIMEOUT',
        `the agentloom API at ${this.config.url} did not answer in time`,
        undefined,
        {
          cause: err,
        },
      );
    }
    const code = socketCode(err) ?? (err as Error).message;
    return new ApiClientError(
      'UNAVAILABLE',
      `cannot reach the agentloom API at ${this.config.url} (${code}): start one with \`agentloom dev\` (or \`agentloom api\`), or point --url / AGENTLOOM_URL at it`,
      undefined,
      { cause: err },
    );
  }

  /** Turns a non-2xx answer (its status and body) into an {@link ApiClientError} with the API's code and message. */
  private failure(status: number, statusText: string, text: string): ApiClientError {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const body = errorSchema.safeParse(parsed);
    if (!body.success) {
      const snippet = text.trim().slice(0, 200) || statusText;
      return new ApiClientError(
        `HTTP_${status}`,
        `${this.config.url} answered ${status}: ${snippet}`,
        status,
      );
    }
    let { message } = body.data.error;
    if (status === 401) message += ' (the CLI sends --api-key or AGENTLOOM_API_KEY)';
    return new ApiClientError(body.data.error.code, message, status);
  }

  /**
   * Sends a plain request through `node:http` / `node:https` and reads its whole answer; throws the API's error for
   * a non-2xx answer and {@link unreachable}'s for none (or one that broke off, or took over a minute).
   */
  private async request(
    path: string,
    init: { method?: string; body?: unknown },
  ): Promise<{ status: number; text: string }> {
    const url = new URL(`${this.config.url}${path}`);
    const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
    const headers = this.headers({
      accept: 'application/json',
      ...(payload === undefined
        ? {}
        : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
    });
    const send: typeof httpRequest =
      url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
    const signal = AbortSignal.timeout(this.requestTimeoutMs);
    const options: RequestOptions = { method: init.method ?? 'GET', headers, signal };
    let answer: { status: number; statusText: string; text: string };
    try {
      answer = await new Promise((resolve, reject) => {
        const req = send(url, options, (response: IncomingMessage) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? '',
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          // Closed before its end: the connection was lost mid-answer (a no-op once 'end' resolved).
          response.on('close', () =>
            reject(Object.assign(new Error('the answer broke off'), { code: 'ECONNRESET' })),
          );
        });
        req.on('error', reject);
        req.end(payload);
      });
    } catch (err) {
      throw this.unreachable(signal.aborted ? signal.reason : err);
    }
    if (answer.status < 200 || answer.status > 299) {
      throw this.failure(answer.status, answer.statusText, answer.text);
    }
    return answer;
  }

  /** Sends a request and returns the fetch response (2xx) or throws the API's error: for event streams. */
  private async send(
    path: string,
    init: { headers?: Record<string, string>; signal: AbortSignal },
  ): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(`${this.config.url}${path}`, {
        headers: this.headers(init.headers),
        signal: init.signal,
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw this.unreachable(err);
    }
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw this.failure(response.status, response.statusText, text);
    }
    return response;
  }

  /** Sends a request and parses its JSON answer with `schema`. */
  private async json<T>(
    schema: z.ZodType<T>,
    path: string,
    init: { method?: string; body?: unknown } = {},
  ): Promise<T> {
    const response = await this.request(path, init);
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      // A body that is not JSON is a wrong server.
      body = undefined;
    }
    // jitless: zod would otherwise compile a parser for each object schema on its first use (`new Function`), which
    // pays off over many parses; a client command parses each answer once.
    const parsed = schema.safeParse(body, { jitless: true });
    if (!parsed.success) {
      throw new ApiClientError(
        'BAD_RESPONSE',
        `${this.config.url}${path} answered something that is not an agentloom API answer (${parsed.error.issues[0]?.message ?? 'invalid'}): is --url the address of an agentloom API of the same version?`,
        response.status,
      );
    }
    return parsed.data;
  }

  /** `POST /v1/apps/:app/invocations`: enqueues a run. */
  enqueue(app: string, body: EnqueueBody): Promise<EnqueueResult> {
    return this.json(enqueueResultSchema, `/v1/apps/${encodeURIComponent(app)}/invocations`, {
      method: 'POST',
      body,
    });
  }

  /** `GET /v1/invocations/:id`: the invocation with its pending calls. */
  invocation(id: string): Promise<InvocationJson> {
    return this.json(invocationSchema, `/v1/invocations/${encodeURIComponent(id)}`);
  }

  /** `GET /v1/invocations/:id/nodes`: its node tree, in creation order. */
  async nodes(id: string): Promise<NodeJson[]> {
    return (await this.json(nodeListSchema, `/v1/invocations/${encodeURIComponent(id)}/nodes`)).nodes;
  }

  /** One page of stored events after `after`. */
  events(id: string, after = 0): Promise<EventPage> {
    return this.json(eventListSchema, `/v1/invocations/${encodeURIComponent(id)}/events?after=${after}`);
  }

  /** `POST /v1/invocations/:id/confirmations/:callId`: confirms or rejects a call. */
  confirm(
    id: string,
    callId: string,
    answer: { confirmed: boolean; payload?: unknown },
  ): Promise<InvocationJson> {
    const path = `/v1/invocations/${encodeURIComponent(id)}/confirmations/${encodeURIComponent(callId)}`;
    return this.json(invocationSchema, path, { method: 'POST', body: answer });
  }

  /**
   * `POST /v1/invocations/:id/responses`: answers one paused call with `response`; `name` is the function answered
   * (`adk_request_credential` for an `auth` pause), left out when not given.
   */
  respond(
    id: string,
    callId: string,
    response: Record<string, unknown>,
    name?: string,
  ): Promise<InvocationJson> {
    return this.json(invocationSchema, `/v1/invocations/${encodeURIComponent(id)}/responses`, {
      method: 'POST',
      body: { functionResponses: [{ id: callId, ...(name === undefined ? {} : { name }), response }] },
    });
  }

  /** `GET /v1/credentials`: a user's stored credentials (never their secrets), in one app or all. */
  async credentials(filter: { userId: string; app?: string }): Promise<CredentialJson[]> {
    const query = queryOf(filter);
    return (await this.json(credentialListSchema, `/v1/credentials?${query}`)).credentials;
  }

  /** `DELETE /v1/credentials`: deletes a user's credentials (in one app, or the one under a key); how many. */
  async deleteCredentials(filter: { userId: string; app?: string; credentialKey?: string }): Promise<number> {
    const query = queryOf(filter);
    return (await this.json(credentialsDeletedSchema, `/v1/credentials?${query}`, { method: 'DELETE' }))
      .deleted;
  }

  /** `POST /v1/invocations/:id/cancel` (an ended run is left as it is). */
  cancel(id: string): Promise<InvocationJson> {
    return this.json(invocationSchema, `/v1/invocations/${encodeURIComponent(id)}/cancel`, {
      method: 'POST',
    });
  }

  /** `POST /v1/invocations/:id/retry` (failed or cancelled runs only: else CONFLICT). */
  retry(id: string, body?: { budget?: Record<string, unknown> }): Promise<InvocationJson> {
    return this.json(invocationSchema, `/v1/invocations/${encodeURIComponent(id)}/retry`, {
      method: 'POST',
      ...(body ? { body } : {}),
    });
  }

  /** `POST /v1/invocations/:id/fork`: a new run with the history up to `body.at` copied, live from there. */
  fork(id: string, body: ForkBody): Promise<{ invocationId: string; sessionId: string }> {
    return this.json(forkResultSchema, `/v1/invocations/${encodeURIComponent(id)}/fork`, {
      method: 'POST',
      body,
    });
  }

  /** `GET /v1/diff?a&b`: two runs compared node by node. */
  diff(a: string, b: string) {
    return this.json(diffSchema, `/v1/diff?${queryOf({ a, b })}`);
  }

  /** `GET /v1/invocations`: one page of an app's runs, newest first. */
  list(filter: { app?: string; status?: string; limit?: number; cursor?: string }) {
    const query = queryOf({
      ...filter,
      limit: filter.limit === undefined ? undefined : String(filter.limit),
    });
    return this.json(invocationPageSchema, `/v1/invocations?${query}`);
  }

  /** `POST /v1/invocations/:id/replay`: replays a recorded run on its recorded answers; the first divergence. */
  replay(id: string): Promise<ReplayJson> {
    return this.json(replayResultSchema, `/v1/invocations/${encodeURIComponent(id)}/replay`, {
      method: 'POST',
    });
  }

  /**
   * Opens the SSE stream of an invocation's events. Resolves with the response once its headers arrived: 200 (read
   * `body`) or 204 (a resumed stream of an ended run with nothing newer).
   */
  openEventStream(id: string, request: EventStreamRequest = {}): Promise<Response> {
    const query = new URLSearchParams();
    if (request.after !== undefined) query.set('after', String(request.after));
    query.set('partial', request.partial ? '1' : '0');
    if (request.stay !== undefined) query.set('stay', request.stay ? '1' : '0');
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (request.lastEventId !== undefined) headers['last-event-id'] = String(request.lastEventId);
    // No timeout: a stream lasts as long as the run; heartbeats keep it alive, `signal` ends it.
    return this.send(`/v1/invocations/${encodeURIComponent(id)}/events?${query}`, {
      headers,
      signal: request.signal ?? new AbortController().signal,
    });
  }
}
