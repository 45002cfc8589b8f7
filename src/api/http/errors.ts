/**
 * Errors over HTTP: every failure answers `{ error: { code, message, details? } }` (CONTRACT.md "HTTP API") with a
 * status that says whose fault it is, the offending field named in `details.field`, and never a stack trace.
 */
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isInfrastructureError } from '../../core/errors.js';

/** The body of every error response. */
export interface ApiErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

/**
 * The body of an error on ADK's API-server routes: FastAPI's `{ detail }`, as adk-python's server answers
 * (`HTTPException(detail=…)`), so a client written for it reads ours. The message is the one /v1 would give.
 */
export interface AdkErrorBody {
  detail: string;
}

/** The route families of the API, each with its error shape: /v1's `{error}`, ADK's `{detail}`. */
export type ErrorShape = 'v1' | 'adk';

/** A failure's body in the shape of its route family. */
export function errorBodyOf(body: ApiErrorBody, shape: ErrorShape): ApiErrorBody | AdkErrorBody {
  return shape === 'adk' ? { detail: body.error.message } : body;
}

/** An error raised by the API layer itself (auth, unknown routes, refused input). */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** HTTP status of each engine error code; anything else is a 500. */
const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  VALIDATION: 400,
  TEMPLATE: 400,
  OUTPUT_SCHEMA: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  DEFINITION_MISMATCH: 409,
  LLM_CALL_BUDGET_EXCEEDED: 409,
  BUDGET_EXCEEDED: 409,
  CANCELLED: 409,
  TIMEOUT: 504,
};

/** Error codes of statuses Fastify raises before a handler runs (body parsing, routing). */
const CODE_OF_STATUS: Readonly<Record<number, string>> = {
  400: 'VALIDATION',
  401: 'UNAUTHORIZED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  431: 'HEADERS_TOO_LARGE',
  503: 'UNAVAILABLE',
};

/** What an error becomes on the wire. `log` says whether it is ours (500s are logged with their stack). */
export interface HttpFailure {
  statusCode: number;
  body: ApiErrorBody;
  log: 'error' | 'warn' | 'none';
}

function body(code: string, message: string, details?: Record<string, unknown>): ApiErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** One failed check of a request schema, as `details.issues[]` lists it. */
interface Issue {
  field: string;
  message: string;
}

/** `body.userId`, `querystring.limit`, or `body` for the body as a whole. */
function where(location: string, field: string): string {
  return field === location ? location : `${location}.${field}`;
}

function validationFailure(err: { validation: unknown[]; validationContext?: string }): HttpFailure {
  const location = err.validationContext ?? 'body';
  const issues: Issue[] = err.validation.map((raw) => {
    const issue = raw as { instancePath?: string; message?: string };
    const path = (issue.instancePath ?? '').split('/').filter(Boolean).join('.');
    return { field: path || location, message: issue.message ?? 'is invalid' };
  });
  const first = issues[0] as Issue;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more: see details.issues)` : '';
  return {
    statusCode: 400,
    body: body('VALIDATION', `${where(location, first.field)}: ${first.message}${more}`, {
      field: first.field,
      location,
      issues,
    }),
    log: 'none',
  };
}

/** Maps anything thrown while handling a request to its status and body. */
export function httpFailure(err: unknown, requestId: string): HttpFailure {
  if (err instanceof HttpError) {
    return { statusCode: err.statusCode, body: body(err.code, err.message, err.details), log: 'none' };
  }
  if (hasZodFastifySchemaValidationErrors(err)) return validationFailure(err);
  const e = err as { code?: unknown; statusCode?: unknown; message?: unknown; details?: unknown };
  // An AgentloomError (or a stored one): its code decides; its message already says what to do.
  if (typeof e?.code === 'string' && e.code in STATUS_OF_CODE && typeof e.message === 'string') {
    const details =
      typeof e.details === 'object' && e.details !== null
        ? (e.details as Record<string, unknown>)
        : undefined;
    return {
      statusCode: STATUS_OF_CODE[e.code] as number,
      body: body(e.code, e.message, details),
      log: 'none',
    };
  }
  if (isInfrastructureError(err)) {
    return {
      statusCode: 503,
      body: body('UNAVAILABLE', `the database or queue did not answer; retry later (request ${requestId})`, {
        retryable: true,
      }),
      log: 'warn',
    };
  }
  // Fastify's own client errors (bad JSON, body too large, unsupported media type): their messages are safe.
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    const message = typeof e.message === 'string' ? e.message : 'bad request';
    const field = status === 413 || status === 415 || status === 400 ? { field: 'body' } : undefined;
    return {
      statusCode: status,
      body: body(CODE_OF_STATUS[status] ?? 'BAD_REQUEST', message, field),
      log: 'none',
    };
  }
  return {
    statusCode: 500,
    body: body('INTERNAL', `internal error; the server log has it under request ${requestId}`),
    log: 'error',
  };
}

/** The error body of an unknown route (404 in the same shape as every other error). */
export function routeNotFound(method: string, url: string): HttpError {
  const path = url.split('?')[0] ?? '';
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return new HttpError(
    404,
    'NOT_FOUND',
    `no route ${method} ${shown}; the routes are listed at /openapi.json`,
  );
}

/** The code of an HTTP status, for errors written outside Fastify (client errors on the socket). */
export function codeOfStatus(status: number): string {
  return CODE_OF_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'BAD_REQUEST');
}
