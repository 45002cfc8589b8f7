/**
 * The single error type of agentloom. Errors are classified by `code`, never by `instanceof`, because an error
 * that was stored and read back (a failed invocation, a failed node) is a plain object.
 */

/** Stable error codes. Extend freely; never rename one that has shipped. */
export type ErrorCode =
  | 'VALIDATION'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'LLM_CALL_BUDGET_EXCEEDED'
  /** A run's token, cost or model-call budget (`budget`, `onExceeded: 'fail'`) would be crossed by the next call. */
  | 'BUDGET_EXCEEDED'
  | 'DEFINITION_MISMATCH'
  | 'MAX_ITERATIONS'
  | 'TEMPLATE'
  | 'OUTPUT_SCHEMA'
  | 'MODEL_ERROR'
  | 'TOOL_ERROR'
  | 'CANCELLED'
  | 'FENCED'
  | 'TIMEOUT'
  | 'CONFIG'
  | 'AUTH'
  /** A remote A2A agent failed, rejected or refused the task, or could not be reached. */
  | 'REMOTE_AGENT'
  | 'REPLAY_DIVERGED'
  /** A plugin's callback threw (details name the plugin and the callback); the step runs again. */
  | 'PLUGIN_ERROR'
  | 'INTERNAL';

/** Options of {@link AgentloomError}. */
export interface AgentloomErrorOptions {
  /** Whether retrying the same operation may succeed (a 503, a lost connection). Default false. */
  retryable?: boolean;
  /** Structured facts for the caller: the field that was wrong, the id that was missing. */
  details?: Record<string, unknown>;
  /** The original error. */
  cause?: unknown;
}

/** The error agentloom throws. `message` says what went wrong and what to do instead. */
export class AgentloomError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AgentloomErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentloomError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }

  /** The JSON form stored with a failed node or invocation and sent over HTTP. */
  toJSON(): StoredError {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

/**
 * Thrown by a tool whose credential was refused by the service it calls (an HTTP 401, a revoked token): the
 * engine deletes the stored credential and asks the user again, once per call; a second refusal goes to the model.
 */
export class AuthError extends AgentloomError {
  constructor(message = 'the credential was refused', options: AgentloomErrorOptions = {}) {
    super('AUTH', message, options);
    this.name = 'AuthError';
  }
}

/** An error as stored in Postgres or sent over the wire. */
export interface StoredError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** True when `err` carries the given agentloom error code (works on revived plain objects too). */
export function hasErrorCode(err: unknown, code: ErrorCode): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

/** Converts anything thrown into a {@link StoredError}. */
export function toStoredError(err: unknown): StoredError {
  if (err instanceof AgentloomError) return err.toJSON();
  if (err instanceof Error) return { code: 'INTERNAL', message: err.message };
  return { code: 'INTERNAL', message: String(err) };
}

/** Socket and DNS error codes of a lost or unreachable database connection (node-postgres passes them through). */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Messages of code-less errors that node-postgres, pg-pool and PGlite raise when the connection (or the
 * database handle) is gone. Matched exactly: they are fixed strings in those libraries.
 */
const CONNECTION_MESSAGES: ReadonlySet<string> = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Connection terminated due to connection timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end on the pool',
  'PGlite is closed',
]);

/** SQLSTATEs of a server that went away or is overloaded, or of a transaction Postgres asks us to run again. */
function isTransientSqlState(code: string): boolean {
  return (
    /^(08|53)[0-9A-Z]{3}$/.test(code) || // connection exception, insufficient resources
    code === '57P01' || // admin_shutdown (fast shutdown, pg_terminate_backend)
    code === '57P02' || // crash_shutdown
    code === '57P03' || // cannot_connect_now (starting up, shutting down, recovering)
    code === '40001' || // serialization_failure
    code === '40P01' // deadlock_detected
  );
}

/** How deep {@link isInfrastructureError} looks into `cause` chains and AggregateErrors (cycles end there too). */
const MAX_CAUSE_DEPTH = 8;

/**
 * True when `err` is a fault of the machinery rather than of the agent: the database was unreachable, restarted
 * or overloaded, or a test fault point simulated a crash (`{ crash: true }`). Such an error must not become a
 * tool's `{error}` response or a failed node: the step is abandoned uncommitted and the queue delivers it again.
 *
 * Looks through `cause` chains and `AggregateError.errors` (any member counts), up to {@link MAX_CAUSE_DEPTH}
 * levels, because drizzle wraps driver errors (`DrizzleQueryError`) and callers wrap with `{ cause }`. Two kinds
 * of wrapper end the search, since they already say whose failure it is:
 * - an {@link AgentloomError} decides by its own code: `INTERNAL` with `retryable` is infrastructure; any other
 *   code (e.g. a `MODEL_ERROR` of a model client whose HTTP call failed) is not, whatever its cause. A non-retryable
 *   `INTERNAL` classifies nothing, so its cause is examined.
 * - Node's `fetch` failure (`TypeError: fetch failed`): its socket error is about the HTTP peer a tool or model
 *   talked to, not our database; treating it as ours would retry the step forever instead of telling the model.
 */
export function isInfrastructureError(err: unknown): boolean {
  return classify(err, 0, new Set());
}

function classify(err: unknown, depth: number, seen: Set<unknown>): boolean {
  if (typeof err !== 'object' || err === null || depth > MAX_CAUSE_DEPTH || seen.has(err)) return false;
  seen.add(err);
  const e = err as { code?: unknown; message?: unknown; crash?: unknown; cause?: unknown };
  if (e.crash === true) return true;
  if (err instanceof AgentloomError) {
    if (err.code !== 'INTERNAL') return false;
    if (err.retryable) return true;
  } else if (typeof e.code === 'string') {
    if (NETWORK_CODES.has(e.code) || isTransientSqlState(e.code)) return true;
  } else if (typeof e.message === 'string' && CONNECTION_MESSAGES.has(e.message)) {
    // Only code-less errors: a stored error revived as `{ code: 'INTERNAL', message }` is not a live connection.
    return true;
  }
  if (err instanceof TypeError && err.message === 'fetch failed') return false;
  if (err instanceof AggregateError && err.errors.some((member) => classify(member, depth + 1, seen))) {
    return true;
  }
  return classify(e.cause, depth + 1, seen);
}
