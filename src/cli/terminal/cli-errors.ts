/**
 * How the command line reports failures: one plain line on stderr (`agentloom: CODE: message`), never a stack
 * trace, and an exit code that says whose fault it was (CONTRACT.md "Command line": 1 failed, 2 bad usage).
 */

/** Exit codes of the command line. */
export const EXIT = { ok: 0, failed: 1, usage: 2, paused: 3 } as const;

/**
 * A command was called wrongly (a missing or malformed argument, a bad flag value): exit 2. The message says what
 * to write instead.
 */
export class UsageError extends Error {
  readonly code = 'USAGE';

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A failure answered by the HTTP API (`{error: {code, message}}`) or met on the way to it. */
export class ApiClientError extends Error {
  constructor(
    /** The API's error code (`NOT_FOUND`, `CONFLICT`, …), or `UNAVAILABLE` / `BAD_RESPONSE` from the client. */
    readonly code: string,
    message: string,
    /** The HTTP status; undefined when no answer came. */
    readonly httpStatus?: number,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiClientError';
  }
}

/** The one line printed for an error: `CODE: message` when it has a code, else its message. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)
      ? `${code}: ${err.message}`
      : err.message;
  }
  return String(err);
}

/** The exit code of a command that threw `err`: 2 for bad usage, else 1. */
export function exitCodeOfError(err: unknown): number {
  return (err as { code?: unknown } | null)?.code === 'USAGE' ? EXIT.usage : EXIT.failed;
}

/**
 * The exit code of a run's status (`run --follow`, `events --follow`, `status`): 0 completed (or still queued or
 * running: nothing has gone wrong yet), 3 paused, 1 failed or cancelled (or a status this client does not know).
 */
export function exitCodeOfStatus(status: string): number {
  if (status === 'completed' || status === 'queued' || status === 'running') return EXIT.ok;
  if (status === 'paused') return EXIT.paused;
  return EXIT.failed;
}
