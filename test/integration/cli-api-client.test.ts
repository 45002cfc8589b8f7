/**
 * The CLI's HTTP client (src/cli/client/api-client.ts) against a real HTTP server on a local port: what it sends
 * (method, JSON body, bearer key), what it makes of each kind of answer (a valid one, the API's error body, a
 * non-API error page, something that is not JSON, an answer cut off mid-body, none at all, a closed port), each
 * failure an ApiClientError with the code and message the CLI prints.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/cli/client/api-client.js';
import { ApiClientError } from '../../src/cli/terminal/cli-errors.js';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let base: string;
const received: Received[] = [];
const hanging = new Set<ServerResponse>();

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
  const json = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  };
  const path = (req.url ?? '').split('?')[0];
  if (path === '/v1/invocations/inv_ok/nodes') return json(200, { nodes: [] });
  if (path === '/v1/apps/writer/invocations') {
    return json(202, { invocationId: 'inv_new', sessionId: 'ses_1', status: 'queued' });
  }
  if (path === '/v1/credentials') return json(200, { deleted: 2 });
  if (path === '/v1/invocations/inv_missing/nodes') {
    return json(404, { error: { code: 'NOT_FOUND', message: 'invocation inv_missing does not exist' } });
  }
  if (path === '/v1/invocations/inv_locked/nodes') {
    return json(401, { error: { code: 'UNAUTHORIZED', message: 'an API key is required' } });
  }
  if (path === '/v1/invocations/inv_proxy/nodes') {
    res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
    return;
  }
  if (path === '/v1/invocations/inv_html/nodes') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<html>a login page</html>');
    return;
  }
  if (path === '/v1/invocations/inv_shape/nodes') return json(200, { items: [] });
  if (path === '/v1/invocations/inv_cut/nodes') {
    // Promises 1000 bytes, sends 10, then the connection is gone.
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"nodes": [');
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  if (path === '/v1/invocations/inv_slow/nodes') {
    hanging.add(res); // never answered
    return;
  }
  json(500, { error: { code: 'INTERNAL', message: `no route ${path}` } });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => route(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.socket?.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The ApiClientError `promise` rejects with. */
async function failureOf(promise: Promise<unknown>): Promise<ApiClientError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiClientError);
  return err as ApiClientError;
}

describe('the CLI API client', () => {
  it('sends a GET with the bearer key and no body, and parses the answer', async () => {
    const client = new ApiClient({ url: base, apiKey: 'k_secret' });
    expect(await client.nodes('inv_ok')).toEqual([]);
    const got = received.at(-1)!;
    expect(got).toMatchObject({ method: 'GET', url: '/v1/invocations/inv_ok/nodes', body: '' });
    expect(got.headers.authorization).toBe('Bearer k_secret');
    expect(got.headers['content-type']).toBeUndefined();
  });

  it('sends a POST body as JSON and a DELETE with its query', async () => {
    const client = new ApiClient({ url: base, apiKey: undefined });
    const result = await client.enqueue('writer', { input: 'héllo ✓', userId: 'u1' });
    expect(result).toEqual({ invocationId: 'inv_new', sessionId: 'ses_1', status: 'queued' });
    const post = received.at(-1)!;
    expect(post.method).toBe('POST');
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.headers.authorization).toBeUndefined();
    expect(JSON.parse(post.body)).toEqual({ input: 'héllo ✓', userId: 'u1' });

    expect(await client.deleteCredentials({ userId: 'u1', app: 'writer' })).toBe(2);
    expect(received.at(-1)).toMatchObject({ method: 'DELETE', url: '/v1/credentials?userId=u1&app=writer' });
  });

  it("turns the API's error body into its code and message", async () => {
    const client = new ApiClient({ url: base, apiKey: undefined });
    const err = await failureOf(client.nodes('inv_missing'));
    expect(err).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
    expect(err.message).toBe('invocation inv_missing does not exist');

    const locked = await failureOf(client.nodes('inv_locked'));
    expect(locked.code).toBe('UNAUTHORIZED');
    expect(locked.message).toBe('an API key is required (the CLI sends --api-key or AGENTLOOM_API_KEY)');
  });

  it('names the status and quotes the page of an answer that is not the API', async () => {
    const client = new ApiClient({ url: base, apiKey: undefined });
    const proxy = await failureOf(client.nodes('inv_proxy'));
    expect(proxy).toMatchObject({ code: 'HTTP_502', httpStatus: 502 });
    expect(proxy.message).toBe(`${base} answered 502: <html>Bad Gateway</html>`);

    for (const id of ['inv_html', 'inv_shape']) {
      const err = await failureOf(client.nodes(id));
      expect(err.code).toBe('BAD_RESPONSE');
      expect(err.message).toContain(`${base}/v1/invocations/${id}/nodes answered something that is not`);
    }
  });

  it('fails as UNAVAILABLE when the answer breaks off, and when nothing listens', async () => {
    const client = new ApiClient({ url: base, apiKey: undefined });
    const cut = await failureOf(client.nodes('inv_cut'));
    expect(cut.code).toBe('UNAVAILABLE');
    expect(cut.message).toMatch(new RegExp(`^cannot reach the agentloom API at ${base} \\(`));

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await failureOf(
      new ApiClient({ url: `http://127.0.0.1:${port}`, apiKey: undefined }).nodes('x'),
    );
    expect(refused.code).toBe('UNAVAILABLE');
    expect(refused.message).toBe(
      `cannot reach the agentloom API at http://127.0.0.1:${port} (ECONNREFUSED): start one with \`agentloom dev\` (or \`agentloom api\`), or point --url / AGENTLOOM_URL at it`,
    );
  });

  it('fails as TIMEOUT when no answer comes in time', async () => {
    // The server never answers, so the timer always expires: its length only bounds the test's duration.
    const client = new ApiClient({ url: base, apiKey: undefined }, { requestTimeoutMs: 300 });
    const err = await failureOf(client.nodes('inv_slow'));
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toBe(`the agentloom API at ${base} did not answer in time`);
  });
});
