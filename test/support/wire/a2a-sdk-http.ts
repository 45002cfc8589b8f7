/**
 * The node:http side of the `@a2a-js/sdk` agents (`a2a-sdk-server.ts` for 1.x, `a2a-sdk-v03-server.ts` for 0.3.x),
 * as the SDK's express adapter does it (express, the SDK's optional peer, is not installed): the card at
 * `GET /.well-known/agent-card.json`, JSON-RPC at `POST /`, a streamed result written as SSE.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';

/** What one SDK version answers with; read per request, so it may be built once the URL is known. */
export interface SdkHttpHandlers {
  /** The card as JSON. */
  card(): unknown;
  /** The SDK's JSON-RPC transport handling a request body: a result, or an async iterable of stream events. */
  handle(body: Record<string, unknown>, request: IncomingMessage): Promise<unknown>;
  /** One stream event as an SSE block. */
  sseEvent(event: unknown): string;
}

async function bodyOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

/** Serves `handlers` on a free port of 127.0.0.1; `close` ends open streams too. */
export async function serveSdkHttp(
  handlers: SdkHttpHandlers,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method === 'GET' && request.url === '/.well-known/agent-card.json') {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(handlers.card()));
        return;
      }
      const result = await handlers.handle(await bodyOf(request), request);
      if (typeof (result as AsyncIterable<unknown>)?.[Symbol.asyncIterator] === 'function') {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        // As the SDK's express adapter does: the stream is drained to its end even when the client has gone, since
        // the SDK's handler stores the task's progress only while its stream is read.
        for await (const event of result as AsyncIterable<unknown>) {
          if (!response.destroyed) response.write(handlers.sseEvent(event));
        }
        response.end();
        return;
      }
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(result));
    })().catch((err: unknown) => {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
