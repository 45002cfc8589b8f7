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
