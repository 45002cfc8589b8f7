/**
 * What a caller may see. A key sees only its apps; another app's invocation, session or app answers exactly as an
 * unknown one does (404, same code, same message shape), so app names and ids do not leak across keys.
 */
import type { FastifyRequest } from 'fastify';
import { hasErrorCode } from '../../core/errors.js';
import type { Engine } from '../../engine/engine.js';
import type { InvocationView } from '../../engine/runs/views.js';
import { canSee, type Principal } from './auth.js';
import { HttpError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; undefined when the server runs without keys. */
    agentloomPrincipal: Principal | undefined;
  }
}

/** The caller of a request (undefined without keys: everything is visible). */
export function principalOf(request: FastifyRequest): Principal | undefined {
  return request.agentloomPrincipal;
}

/** A name a keyless client may give itself in `X-Agentloom-Actor` (letters, digits, space, _ . @ -). */
const ACTOR = /^[\p{L}\p{N} _.@-]{1,64}$/u;

/**
 * Who answered or enqueued, for the audit columns: the key's name. A server without keys authenticates no one: there
 * the name a client gives in `X-Agentloom-Actor` (the console's "your name") is recorded as given; with keys the
 * header is ignored, so no key holder can answer under another's name.
 */
export function actorOf(request: FastifyRequest): string | undefined {
  const principal = request.agentloomPrincipal;
  if (principal) return principal.name;
  const given = request.headers['x-agentloom-actor'];
  return typeof given === 'string' && ACTOR.test(given.trim()) ? given.trim() : undefined;
}

/** The apps a caller sees among those served. */
export function visibleApps(engine: Engine, request: FastifyRequest): string[] {
  const principal = principalOf(request);
  return [...engine.apps.keys()].filter((app) => canSee(principal, app));
}

/** The 404 of an invocation that does not exist or belongs to an app the caller does not see. */
export function invocationNotFound(id: string): HttpError {
  return new HttpError(404, 'NOT_FOUND', `invocation ${id} does not exist`, { invocationId: id });
}

/** The 404 of a session that does not exist or belongs to an app the caller does not see. */
export function sessionNotFound(id: string): HttpError {
  return new HttpError(404, 'NOT_FOUND', `session ${id} does not exist`, { sessionId: id });
}

/** The 404 of an app that is not served here or not visible to the caller (lists only the visible ones). */
export function appNotFound(engine: Engine, request: FastifyRequest, app: string): HttpError {
  const known = visibleApps(engine, request);
  return new HttpError(
    404,
    'NOT_FOUND',
    `app "${app}" is not served here; apps you can use: ${known.length > 0 ? known.join(', ') : '(none)'}`,
    { field: 'app' },
  );
}

/** An invocation the caller may see, else the uniform 404. */
export async function visibleInvocation(
  engine: Engine,
  request: FastifyRequest,
  id: string,
): Promise<InvocationView> {
  let view: InvocationView;
  try {
    view = await engine.get(id);
  } catch (err) {
    if (hasErrorCode(err, 'NOT_FOUND')) throw invocationNotFound(id);
    throw err;
  }
  if (!canSee(principalOf(request), view.app)) throw invocationNotFound(id);
  return view;
}
