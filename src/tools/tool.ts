/**
 * The tool port and the ToolContext a tool's `execute` receives (SEMANTICS §4).
 */
import type { ToolConfirmation } from '../core/event.js';
import type { StoredError } from '../core/errors.js';
import type { ToolDeclaration } from '../models/model.js';
import type { AuthCredential, ToolAuth } from './auth.js';

/** Whether re-running a call whose response was lost is safe. */
export type SideEffects = 'idempotent' | 'unsafe';

/** Reads and writes of state from a tool or callback; writes land in the response event's `stateDelta`. */
export interface StateAccessor {
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): void;
  delete(key: string): void;
  has(key: string): boolean;
  /** The merged view including this call's own writes. */
  toJSON(): Record<string, unknown>;
}

/** Side effects a tool asks for. */
export interface ToolActions {
  escalate?: boolean;
  skipSummarization?: boolean;
  transferToAgent?: string;
}

/** How a child node (transfer target, AgentTool agent) ended. */
export interface ChildOutcome {
  status: 'completed' | 'failed' | 'paused' | 'cancelled';
  escalated: boolean;
  /** The child's last final text (or its outputKey value rendered as text). */
  output?: string;
  error?: StoredError;
}

/**
 * A question to the user while a call is open (an MCP server's `elicitation/create`): a message and the flat
 * JSON Schema of the object it wants back.
 */
export interface ElicitationRequest {
  message: string;
  /** `{type: "object", properties: {…}, required?: […]}` whose properties are strings, numbers, booleans or enums. */
  requestedSchema: Record<string, unknown>;
  /** Who asks (an MCP server's name), shown beside the message. */
  source?: string;
  /** How long to wait for an answer (ms) before it counts as `decline`. */
  timeoutMs: number;
}

/** The user's answer to an {@link ElicitationRequest} (MCP's `ElicitResult`). */
export interface ElicitationAnswer {
  action: 'accept' | 'decline' | 'cancel';
  /** With `accept`: the object asked for. */
  content?: Record<string, unknown>;
  /**
   * Set (with `cancel`) when nobody answered because the question was withdrawn: the run was cancelled, or the
   * step stopped (another attempt took the node over). A user's own `cancel` has none. A tool that passes the
   * answer on (an MCP server's question) must not report a withdrawal as the user's answer.
   */
  withdrawn?: true;
}

/** What `execute` receives besides its arguments. */
export interface ToolContext {
  readonly state: StateAccessor;
  /** Atomically appends `value` to the list at `key` (safe across parallel branches). */
  appendToState(key: string, value: unknown): void;
  readonly actions: ToolActions;
  readonly functionCallId: string;
  readonly invocationId: string;
  readonly agentName: string;
  /** Stable across re-runs of this call: `<invocationId>:<functionCallId>`. Pass it to external APIs. */
  readonly idempotencyKey: string;
  /** The user's credential, for a tool that declares `auth` (never from the model's arguments). */
  readonly credential: AuthCredential | undefined;
  /** Set when the call is re-run after a human answered its confirmation request. */
  readonly toolConfirmation: ToolConfirmation | undefined;
  /** Asks a human to confirm before the call takes effect; the node pauses after this call returns. */
  requestConfirmation(request?: { hint?: string; payload?: unknown }): void;
  /**
   * Asks the user for input while the call runs: a pending call of kind `elicitation` (the request and the answer
   * stored as events), answerable through the API, the CLI and the console. Resolves with the answer; `decline`
   * when none came within `timeoutMs`; `cancel` with `withdrawn` when the run was cancelled. The step keeps its
   * worker meanwhile.
   */
  elicit(request: ElicitationRequest): Promise<ElicitationAnswer>;
  /** Aborted when the invocation is cancelled. */
  readonly signal: AbortSignal;
  /**
   * Calls `send` — the call that makes this tool's request leave the process — with the step's lease surely held
   * at that instant (a worker frozen past its lease, then woken, stops with FENCED instead of sending). The engine
   * already checks just before `run`; a tool that does I/O of its own first (connecting, fetching a token) wraps
   * its request in this.
   */
  sendLeased<T>(send: () => Promise<T>): Promise<T>;
  /**
   * Tells live listeners how far the call got: a partial event (streamed, never stored) carrying a function
   * response `{progress, total?, message?}` for this call. An MCP server's progress notifications arrive here.
   */
  reportProgress(progress: { progress: number; total?: number; message?: string }): void;
  saveArtifact(name: string, artifact: { mime: string; data: Uint8Array | string }): Promise<number>;
  loadArtifact(
    name: string,
    version?: number,
  ): Promise<{ mime: string; data: Uint8Array; version: number } | undefined>;
  /** Ends the whole invocation after this step. */
  endInvocation(): void;
  /** Runs an agent of the tree as a child node of this call (AgentTool uses it). */
  runAgent(agentName: string): Promise<ChildOutcome>;
}

/** A tool an LlmAgent can call. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly isLongRunning: boolean;
  readonly sideEffects: SideEffects;
  /** The declaration offered to the model. */
  declaration(): ToolDeclaration;
  /**
   * The credential the tool needs (the auth gate, after confirmation): without a stored one for the run's user, the
   * call pauses with kind `auth` until the user provides it; then `ctx.credential` carries it.
   */
  readonly auth?: ToolAuth;
  /** Whether this call must be confirmed by a human before it runs. */
  requiresConfirmation(args: Record<string, unknown>, ctx: ToolContext): boolean | Promise<boolean>;
  /** Validates the arguments and runs the tool; the result becomes the function response. */
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
}

/**
 * `tool` with some of its parts replaced (a tracing or metrics wrapper of `run`, a declared `auth`, a replay's
 * answers): the rest delegates to the tool, so a wrapper never forgets a part the Tool port grows.
 */
export function wrapTool(
  tool: Tool,
  parts: Partial<Pick<Tool, 'run' | 'auth' | 'isLongRunning' | 'requiresConfirmation'>>,
): Tool {
  const auth = 'auth' in parts ? parts.auth : tool.auth;
  return {
    name: tool.name,
    description: tool.description,
    isLongRunning: parts.isLongRunning ?? tool.isLongRunning,
    sideEffects: tool.sideEffects,
    ...(auth ? { auth } : {}),
    declaration: () => tool.declaration(),
    requiresConfirmation: parts.requiresConfirmation ?? ((args, ctx) => tool.requiresConfirmation(args, ctx)),
    run: parts.run ?? ((args, ctx) => tool.run(args, ctx)),
  };
}

/** Wraps a non-object result as `{result}` so every function response is an object (as ADK does). */
export function toResponseObject(result: unknown): Record<string, unknown> {
  if (typeof result === 'object' && result !== null && !Array.isArray(result))
    return result as Record<string, unknown>;
  return { result: result ?? null };
}
