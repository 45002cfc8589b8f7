/**
 * A request answered before its body was read (413: too large; 415; 401 before parsing): the client may still be
 * sending it. Closing the connection at once makes a client that streams its body (Node's http, fetch) fail with
 * EPIPE / "fetch failed", often before it reads the answer (curl waits for `100-continue` and does not notice).
 * Two things close it: Fastify's `connection: close` on a refused body (the caller removes it), and Node itself,
 * for an answer that is the connection's last — the client sent `Connection: close` (Node's `agent: false`,
 * `new http.Agent()`, Node 18's global agent) or spoke HTTP/1.0 —, which it ends with `socket.destroySoon()`:
 * our side is ended and the socket destroyed as soon as that is flushed, and the client's next bytes meet a reset.
 *
 * So the rest of the body is read and dropped instead, up to a bound. A connection kept alive then serves the
 * next request; a last one is closed in stages as RFC 9112 §9.6 asks: our side ended after the answer, the body
 * read on to its end, then the socket destroyed. Past the bound the socket is destroyed at once (a client may not
 * make the server read without end).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

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
 * Reads and drops what is left of `request`'s body, within `bounds`, and keeps the connection open meanwhile,
 * also when `response` is its last. Returns false when nothing is left (the body was read, or there is none): the
 * answer may close the connection as it likes. When it returns true the caller must not set `connection: close`
 * (Fastify does on a body too large): the connection's fate is the client's wish, kept by Node.
 */
export function dropUnreadBody(
  request: IncomingMessage,
  response: ServerResponse,
  bounds: UnreadBodyBounds,
): boolean {
  if (request.complete || request.readableEnded || request.destroyed) return false;
  const { socket } = request;
  let received = 0;
  // Set once Node has ended our side after the last answer: the socket is destroyed when the body is read.
  let lastAnswered = false;
  const cut = (): void => {
    done();
    if (typeof socket.destroy === 'function') socket.destroy();
  };
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    if (received > bounds.maxBytes) cut();
  };
  const onEnd = (): void => {
    done();
    // The whole body is read: closing now resets nothing the client sent.
    if (lastAnswered) socket.destroy();
  };
  // Runs after Node's own 'finish' listener, which called `socket.destroySoon()` when the answer was the last:
  // our side is ending (the client reads the answer, then sees the end), and its destroy on the socket's 'finish'
  // is taken back, so that the body is read on. A connection kept alive is still writable: nothing to do.
  const onAnswered = (): void => {
    // An injected request (fastify.inject) has a stand-in socket without a connection to close.
    if (socket.destroyed || socket.writable || typeof socket.destroy !== 'function') return;
    lastAnswered = true;
    socket.removeListener('finish', socket.destroy);
  };
  const timer = setTimeout(cut, bounds.maxMs);
  // A server closing does not wait for a client that sends slowly.
  timer.unref();
  const done = (): void => {
    clearTimeout(timer);
    request.off('data', onData);
    request.off('end', onEnd);
    request.off('close', done);
    request.off('error', done);
    response.off('finish', onAnswered);
  };
  request.on('data', onData);
  request.once('end', onEnd);
  request.once('close', done);
  request.once('error', done);
  response.once('finish', onAnswered);
  return true;
}
