/**
 * A body refused before it is read (413 too large, 401 no key) is read and dropped after the answer, within
 * bounds: the connection then serves the next request; a client that asked to close it (`Connection: close`)
 * sees our side end after the answer, the rest of its body read, and only then the connection closed; a
 * body past `maxBytes`, or a client still sending after `maxMs`, has its connection cut, and the server answers
 * others as before. The whole flow with a real `api` process, both clients and every body route is in
 * test/e2e/api-server.test.ts; Node's client with and without keep-alive, 20 times, in test/e2e/refused-body.test.ts.
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp, type ApiServerOptions } from '../../src/api/index.js';
import { createEngine, type Engine } from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';
import { postWithHttp } from '../support/client/big-body.js';
import { createTestDatabase } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

const MiB = 1024 * 1024;
const big = Buffer.from(JSON.stringify({ userId: 'u', input: 'x'.repeat(24 * MiB) }));

let engine: Engine;
const servers: ApiApp[] = [];

/** An API server over the file's engine, listening on loopback. */
async function serve(options: Omit<ApiServerOptions, 'engine'> = {}): Promise<string> {
  const server = await createApiServer({ engine, processMetrics: false, ...options });
  servers.push(server);
  return server.listen({ port: 0, host: '127.0.0.1' });
}

beforeAll(async () => {
  engine = await createEngine({
    apps: [{ name: 'echo', agent: scripted('echoer', 'echo') }],
    database: await createTestDatabase(),
    queue: 'local',
    logger: pino({ level: 'silent' }),
  });
});

afterAll(async () => {
  for (const server of servers) await server.close();
  await engine?.close();
});

/**
 * Sends a request on `agent` and reads its answer; resolves once the request is over (answer read, body sent).
 * `reusedSocket` says whether it went on a connection left open by an earlier request.
 */
function send(
  url: string,
  agent: Agent,
  init: { method: string; body?: Buffer; headers?: Record<string, string> },
): Promise<{ status: number; text: string; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    let answer: { status: number; text: string } | undefined;
    let closed = false;
    const settle = () => {
      if (answer && closed) resolve({ ...answer, reusedSocket: req.reusedSocket });
    };
    const req: ClientRequest = httpRequest(
      url,
      { method: init.method, agent, headers: init.headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          answer = { status: res.statusCode ?? 0, text };
          settle();
        });
      },
    );
    req.on('error', reject);
    req.on('close', () => {
      closed = true;
      settle();
    });
    req.end(init.body);
  });
}

/**
 * POSTs `body` over a bare TCP connection and never ends the connection itself: resolves when the server closes it
 * (or after 15 s, then `closedBy` is 'client'), with what came back. A bare socket, because Node's http client may
 * see the whole answer before the cut, and raises a write error after its request is over.
 */
function postRaw(
  base: string,
  path: string,
  body: Buffer,
): Promise<{ received: string; closedBy: 'server' | 'client'; error?: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    let received = '';
    let error: string | undefined;
    const socket = connect({ host: hostname, port: Number(port) });
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve({ received, closedBy: 'client', error });
    }, 15_000);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ received, closedBy: 'server', error });
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
  });
}

/** Connections the server holds open. */
function openConnections(server: ApiApp): Promise<number> {
  return new Promise((resolve, reject) =>
    server.server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
  );
}

/**
 * POSTs `body` with `Connection: close` over a bare TCP connection kept half open (the server's end does not end
 * ours), as a client does that writes its whole body before it reads: resolves once every byte is written (or
 * writing failed), with what came back.
 */
function postAskingToClose(
  base: string,
  path: string,
  body: Buffer,
): Promise<{ socket: Socket; received: string; error?: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    let received = '';
    let error: string | undefined;
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body, (err) => {
      error ??= (err as NodeJS.ErrnoException | null | undefined)?.code;
      resolve({ socket, received, error });
    });
  });
}

describe('a body refused unread', () => {
  it('is read to its end after the 413, and the same connection serves the next request', async () => {
    const base = await serve();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await send(`${base}/v1/apps/echo/invocations`, agent, {
        method: 'POST',
        body: big,
        headers: { 'content-type': 'application/json', 'content-length': String(big.length) },
      });
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
      const next = await send(`${base}/healthz`, agent, { method: 'GET' });
      expect(next).toMatchObject({ status: 200, reusedSocket: true });
    } finally {
      agent.destroy();
    }
  });

  it('answers 401 to a big body sent without a key, and reads it to its end too', async () => {
    const base = await serve({ apiKeys: 'ops:unread-body-key-0123456789' });
    const denied = await postWithHttp(`${base}/v1/apps/echo/invocations`, big);
    expect(denied).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHORIZED' } } });
    expect(denied.error).toBeUndefined();
  });

  it('asked to close: answers, ends its side, reads the body to its end, and only then closes', async () => {
    const served = await createApiServer({ engine, processMetrics: false });
    servers.push(served);
    const base = await served.listen({ port: 0, host: '127.0.0.1' });
    const sent = await postAskingToClose(base, '/v1/apps/echo/invocations', big);
    try {
      // Every byte of the 24 MiB went out: the server neither reset the connection nor stopped reading.
      expect(sent.error, sent.received).toBeUndefined();
      expect(sent.received).toMatch(/^HTTP\/1\.1 413 /);
      expect(sent.received).toContain('PAYLOAD_TOO_LARGE');
      // Once the body is read the server lets the connection go (ours still open: it closed on its own).
      await waitFor(async () => (await openConnections(served)) === 0, {
        what: 'the server to close the connection once the body is read',
      });
      await waitFor(() => sent.socket.readableEnded, { what: "the server's end of the connection" });
    } finally {
      sent.socket.destroy();
    }
  });

  it('cuts the connection past maxBytes; the server answers others as before', async () => {
    const base = await serve({ unreadBodyBounds: { maxBytes: 2 * MiB } });
    const cut = await postRaw(base, '/v1/apps/echo/invocations', big);
    // The answer came, keeping the connection open; then the server cut it, past 2 MiB read. A server reading on
    // to the end of the 24 MiB would keep the connection for the next request (the test before: 'client').
    expect(cut.received, cut.error).toMatch(/^HTTP\/1\.1 413 /);
    expect(cut.received).toContain('PAYLOAD_TOO_LARGE');
    expect(cut.received.toLowerCase()).not.toContain('connection: close');
    expect(cut.closedBy, cut.error).toBe('server');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const { invocations } = (await (await fetch(`${base}/v1/invocations`)).json()) as {
      invocations: unknown[];
    };
    expect(invocations).toEqual([]);
  });

  it('cuts the connection of a client still sending after maxMs', async () => {
    const base = await serve({ unreadBodyBounds: { maxMs: 200 } });
    let status: number | undefined;
    let closed = false;
    const req = httpRequest(`${base}/v1/apps/echo/invocations`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(30 * MiB) },
    });
    req.on('response', (res) => {
      status = res.statusCode;
      res.resume();
    });
    req.on('error', () => undefined);
    req.on('close', () => (closed = true));
    // 2 MiB of the 30 announced, then nothing: the answer comes, then the server closes.
    req.write(Buffer.alloc(2 * MiB, 'x'));
    await waitFor(() => status !== undefined && closed, {
      timeoutMs: 20_000,
      what: 'the 413 and the server closing the connection',
    });
    expect(status).toBe(413);
  });
});
