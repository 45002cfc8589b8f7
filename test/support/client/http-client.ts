/**
 * The HTTP client tests use to call an agentloom API server (or any HTTP server): one JSON request, the answer's
 * status, content type, raw text and parsed JSON body, with an optional bearer key per client or per call and a
 * hook that sees every answer's text (to scan answers for secrets).
 */

/** JSON as the API answers it. */
export type Json = Record<string, unknown>;

/**
 * One answer: `body` is the parsed JSON when the answer is JSON (`{}` otherwise, or when empty). `B` is how the
 * test reads bodies: {@link Json} by default, `any` for a file whose assertions walk deep into the answers.
 */
export interface HttpAnswer<B = Json> {
  status: number;
  /** The content-type header ('' when absent). */
  type: string;
  text: string;
  body: B;
}

/** Options of {@link apiClient}. */
export interface ApiClientOptions {
  /** The server's base URL, or a function read at each call (for a server started in beforeAll). */
  base: string | (() => string);
  /** An API key sent as `Authorization: Bearer <key>` on every call that does not name its own. */
  bearer?: string;
  /** Sees every answer's raw text, e.g. to scan all answers for secrets at the end. */
  onAnswer?: (text: string) => void;
  /** Throw when an answer's status is not 2xx, naming the call and quoting the answer. Default false. */
  requireOk?: boolean;
}

/** Options of one call. */
export interface CallOptions {
  /** This call's API key ('' sends none), instead of the client's. */
  bearer?: string;
  headers?: Record<string, string>;
}

/** Sends `method path` with `body` as JSON (none when undefined); `path` may also be a whole URL. */
export type ApiCall<B = Json> = (
  method: string,
  path: string,
  body?: unknown,
  call?: CallOptions,
) => Promise<HttpAnswer<B>>;

/** The `Authorization: Bearer <key>` header, or no header for an empty or absent key. */
export function bearer(key: string | undefined): Record<string, string> {
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** A client for the server at `options.base`. */
export function apiClient<B = Json>(options: ApiClientOptions): ApiCall<B> {
  return async (method, path, body, call = {}) => {
    const base = typeof options.base === 'string' ? options.base : options.base();
    const headers: Record<string, string> = {
      ...bearer(call.bearer ?? options.bearer),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...call.headers,
    };
    const response = await fetch(/^https?:\/\//.test(path) ? path : `${base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    options.onAnswer?.(text);
    if (options.requireOk && !response.ok) {
      throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    }
    const type = response.headers.get('content-type') ?? '';
    return {
      status: response.status,
      type,
      text,
      body: (type.includes('json') && text !== '' ? JSON.parse(text) : {}) as B,
    };
  };
}
