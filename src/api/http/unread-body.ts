/**
 * A request answered before its body was read (413: too large; 415; 401 before parsing): the client may still be
 * sending it. Closing the connection at once — what Fastify asks for, and Node does as soon as the answer is
 * written — makes a client that streams its body (Node's http, fetch) fail with EPIPE / "fetch failed" before it
 * reads the answer (curl waits for `100-continue` and does not notice). So the rest of the body is read and
 * dropped instead, up to a bound, and the connection stays usable; past the bound the socket is destroyed.
 */
import type { IncomingMessage } from 'node:http';

/** How much of a refused body is read and dropped before the connection is cut. */
export interface UnreadBodyBounds {
  /** Bytes read after the answer. Default 64 MiB. */
  maxBytes: number;
  /** Milliseconds from the answer. Default 10 000. */
  maxMs: number;
}

/** The defaults of {@link UnreadBodyBounds}. */
export const UNREAD_BODY_BOUNDS: Readonly<UnreadBodyBounds> = Object.freeze({
  maxBytes: 64 * 1024 * 1024,
  maxMs: 10_000,
});

/**
 * Reads and drops what is left of `request`'s body, within `bounds`. Returns false when nothing is left (the body
 * was read, or there is none): the answer may close the connection as it likes. When it returns true the caller
 * must let the connection live (no `connection: close`): Node would destroy the socket under the reader.
 */
export function dropUnreadBody(request: IncomingMessage, bounds: UnreadBodyBounds): boolean {
  if (request.complete || request.readableEnded || request.destroyed) return false;
  let received = 0;
  const cut = (): void => {
    done();
    request.socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    if (received > bounds.maxBytes) cut();
  };
  const timer = setTimeout(cut, bounds.maxMs);
  // A server closing does not wait for a client that sends slowly.
  timer.unref();
  const done = (): void => {
    clearTimeout(timer);
    request.off('data', onData);
    request.off('end', done);
    request.off('close', done);
    request.off('error', done);
  };
  request.on('data', onData);
  request.once('end', done);
  request.once('close', done);
  request.once('error', done);
  return true;
}
