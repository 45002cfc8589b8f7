/**
 * Oversized request bodies sent the way programs send them — Node's http client and fetch, both streaming the body
 * without waiting for `100-continue` — so a test sees what such a client sees: the answer, or the broken
 * connection (EPIPE, ECONNRESET, "fetch failed") a server that stops reading too early gives it. Node's client is
 * sent both ways it asks for its connection: kept alive (the global agent of Node ≥ 19) and closed after the answer
 * (`Connection: close`: `agent: false`, `new http.Agent()`, Node 18's global agent), which a server answers last.
 */
import { request as httpRequest } from 'node:http';

/** What a client got: the status and body of the answer, and any error of the request. */
export interface BigPostResult {
  client: 'node:http' | 'fetch';
  status?: number;
  body?: unknown;
  /** The error the client met (`EPIPE`, `ECONNRESET`, `fetch failed: …`), if any. */
  error?: string;
}

/** How Node's client asks for its connection: kept for the next request, or closed after the answer. */
export type ConnectionMode = 'keep-alive' | 'close';

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * POSTs `body` with `node:http` (content-length set, written in one go). Resolves once the request is over: the
 * answer read and the request closed, or an error met (an error after the answer counts too). `connection`
 * 'close' sends it without an agent, so with `Connection: close` (default: the global agent, kept alive).
 */
export function postWithHttp(
  url: string,
  body: Buffer,
  headers: Record<string, string> = {},
  connection: ConnectionMode = 'keep-alive',
): Promise<BigPostResult> {
  return new Promise((resolve) => {
    const result: BigPostResult = { client: 'node:http' };
    let answered = false;
    let closed = false;
    const settle = () => {
      if ((answered || result.error !== undefined) && closed) resolve(result);
    };
    const req = httpRequest(
      url,
      {
        method: 'POST',
        ...(connection === 'close' ? { agent: false } : {}),
        headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          result.status = res.statusCode;
          result.body = parse(text);
          answered = true;
          settle();
        });
        res.on('error', (err: NodeJS.ErrnoException) => (result.error ??= err.code ?? err.message));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      result.error ??= err.code ?? err.message;
      settle();
    });
    req.on('close', () => {
      closed = true;
      settle();
    });
    req.end(body);
  });
}

/** POSTs `body` with fetch. */
export async function postWithFetch(
  url: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<BigPostResult> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { client: 'fetch', status: response.status, body: parse(await response.text()) };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { client: 'fetch', error: `${(err as Error).message}: ${cause?.code ?? cause?.message ?? ''}` };
  }
}
