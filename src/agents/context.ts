/**
 * What agents and tools see of a running invocation. The engine implements these ports; agents never touch a
 * driver, a queue or the store.
 */
import type { Content } from '../core/content.js';
import type { Event, NewEvent } from '../core/event.js';
import type { StoredError } from '../core/errors.js';
import type { Model, ModelRequest, ModelResponse, ModelUsage } from '../models/model.js';
import type { ChildOutcome, ElicitationAnswer, ElicitationRequest, Tool } from '../tools/tool.js';
import type { Toolset } from '../tools/toolset.js';
import type { AuthCredential, ToolAuth } from '../tools/auth.js';
import type { PluginManager } from '../plugins/plugin-manager.js';

export type { ChildOutcome };

/** A run's view of its user's credentials (the auth gate). */
export interface RunCredentials {
  /** The credential `auth` asks for, ready to use (refreshed when near expiry); undefined when the user must be asked. */
  get(auth: ToolAuth): Promise<AuthCredential | undefined>;
  /** Deletes the user's credential for `auth` (the service refused it). */
  revoke(auth: ToolAuth): Promise<void>;
  /** The config an `adk_request_credential` call shows (no secret); for OAuth2, where to consent for `requestId`. */
  requestConfig(auth: ToolAuth, requestId: string): Promise<Record<string, unknown>>;
}

/** The invocation as a custom agent sees it (CONTRACT.md `runImpl(ctx)`). */
export interface InvocationContext {
  readonly invocationId: string;
  readonly agent: { readonly name: string };
  readonly branch: string | undefined;
  readonly nodePath: string;
  readonly session: {
    readonly id: string;
    readonly userId: string;
    readonly app: string;
    readonly state: Record<string, unknown>;
  };
  readonly signal: AbortSignal;
  /** Ends the whole invocation at the next step boundary (SEMANTICS §7). */
  endInvocation(): void;
}

/** A tool call that pauses its node until someone answers it. */
export interface PauseRequest {
  /** The id to answer: the adk_request_confirmation call id, or the long-running call's own id. */
  callId: string;
  kind: 'confirmation' | 'long_running' | 'in_doubt' | 'auth' | 'budget';
  /** The original tool call. */
  name: string;
  args: Record<string, unknown>;
  originalCallId: string;
  hint?: string;
  payload?: unknown;
  /** With kind `auth`: what is asked for (the scheme and the credential key; never a secret). */
  auth?: Record<string, unknown>;
}

/**
 * The `agentState` key of the event `retry` stores in the journal of each leaf it runs again: what the leaf started
 * outside the engine before (a remote agent's task) is not followed again after it.
 */
export const RETRIED_MARK = 'retried';

/**
 * The engine side of one leaf node activation (LlmAgent, custom agent): its journal, fenced event appends,
 * budget, children, artifacts. Every method that writes is fenced by the node's attempt.
 */
export interface NodeRuntime {
  readonly invocationId: string;
  readonly app: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly nodePath: string;
  readonly branch: string | undefined;
  readonly signal: AbortSignal;
  /** The engine's plugins: asked before the agent's own callbacks (plugins/pipeline.ts). Absent: none. */
  readonly plugins?: PluginManager;
  /** Events already stored by earlier attempts of this node (its journal), oldest first. */
  readonly journal: readonly Event[];
  /**
   * Ids of this node's paused calls that were withdrawn (cancelled with their invocation): a retried run asks them
   * again under a new id instead of waiting for an answer that can no longer come.
   */
  readonly withdrawnCalls?: ReadonlySet<string>;
  /**
   * The session's events as of this step: loaded once on first use (only model calls need the whole history),
   * plus those this step appended.
   */
  sessionEvents(): Promise<readonly Event[]>;
  /** The merged state (session, app:, user:, temp:) as of this step's latest write. */
  state(): Record<string, unknown>;
  /** An instruction replacing the agent's own in this invocation (a fork's `instruction`), if any. */
  instructionOverride?(agentName: string): string | undefined;
  /**
   * Appends an event of this node (fenced); resolves with the stored event. With `modelCall`, the event is a model
   * call's response: the call's spend (its usage, priced) is counted in the same commit.
   */
  emit(event: NewEvent, options?: EmitOptions): Promise<Event>;
  /**
   * Appends an event of this node (fenced) that nothing in this step reads back: stored before the step's next
   * write, model call, tool call, child or history read (or shortly after, if none comes), and otherwise in the
   * same commit as the step's completion. An event that changes state is stored at once, as by `emit`.
   */
  emitDeferred(event: NewEvent): Promise<void>;
  /**
   * Called before a model call or a tool call starts: resolves when this attempt's lease is surely still held
   * (renewing it first if this process's clock says it may have lapsed — after a freeze or a long pause); throws
   * FENCED when another worker took the node over, so a zombie never spends or acts.
   */
  checkLease(): Promise<void>;
  /**
   * Calls `send` — the call that makes a model or tool request leave this process — with this attempt's lease
   * surely held at that instant: a synchronous clock check when the lease is fresh, a renewal (FENCED for a zombie)
   * when this process's clock says it may have lapsed, and no await between the check and `send()`. Deferred
   * events are stored first.
   */
  sendLeased<T>(send: () => Promise<T>): Promise<T>;
  /**
   * Called before a model call leaves: checks the budgets (the run's, and those of the agent's subtree and its
   * ancestors') against what is spent plus this call's reservation, then counts the call against `maxLlmCalls`.
   * Resolves to undefined when the call fits as it is, or to the output limit (tokens) it must be sent with: what
   * the budgets leave, when that is less than the reservation but at least `MIN_OUTPUT_TOKENS`.
   * Throws {@link BudgetPaused} (the node pauses with a `budget` request), BUDGET_EXCEEDED (`onExceeded: 'fail'`) or
   * LLM_CALL_BUDGET_EXCEEDED.
   */
  checkBudget(request: ModelRequest): Promise<number | undefined>;
  /**
   * Takes a slot of the shared rate limits for the model call `request` (to model `ref`), or throws
   * {@link RateLimitWait}: the step gives back its worker and runs again later. Undefined when no limit applies.
   * Settle the slot after the call; the engine settles any left open when the step ends.
   */
  acquireModelSlot?(
    request: ModelRequest,
    ref: Model | string | undefined,
  ): Promise<ModelCallSlot | undefined>;
  /** Resolves a model reference (an instance or a registered name). */
  resolveModel(ref: Model | string | undefined): Model;
  /** Resolves a tool reference (an instance or the name of a built-in or registered tool). */
  resolveTool(ref: Tool | string): Tool;
  /** A toolset's tools as it lists them now (cached by the toolset). */
  resolveToolset(toolset: Toolset): Promise<Tool[]>;
  /**
   * Runs `agentName` as a child node `<nodePath>/<segment>`: returns its outcome when it has ended; otherwise
   * suspends this node (throws) until the child ends, then the node is re-run and the call returns.
   */
  runChild(agentName: string, options: { segment: string; branch?: string }): Promise<ChildOutcome>;
  /** Ends the invocation at the next step boundary. */
  endInvocation(): void;
  /** Loads an artifact's latest (or given) version. */
  loadArtifact(
    name: string,
    version?: number,
  ): Promise<{ mime: string; data: Uint8Array; version: number } | undefined>;
  /** Saves a new artifact version; returns the version. */
  saveArtifact(name: string, artifact: { mime: string; data: Uint8Array }): Promise<number>;
  /** Named crash points for durability tests (a no-op in production). */
  fault(point: string): Promise<void>;
  /** Delivers a token-level partial response to live listeners (never stored). */
  publishPartial(content: Content): void;
  /** The run's user's credentials (the auth gate). */
  readonly credentials: RunCredentials;
  /**
   * Asks the user for input while the tool call `call` is open (see ToolContext.elicit): stores the request (an
   * event and a pending call of kind `elicitation`, fenced), then waits for the answer, the timeout or a cancel.
   */
  elicit(
    call: { id: string; name: string; args: Record<string, unknown> },
    request: ElicitationRequest,
  ): Promise<ElicitationAnswer>;
}

/** Options of {@link NodeRuntime.emit}. */
export interface EmitOptions {
  /** The event is the response of a model call: `model` names it (for its price), `usage` is what it reported. */
  modelCall?: { model: string; usage: ModelUsage | undefined };
}

/**
 * Thrown by `checkBudget` when the next model call would cross a budget whose `onExceeded` is 'pause': the leaf
 * pauses with `request` (kind `budget`) and holds no worker until a person raises the budget or stops the run.
 * Control flow, never a failure.
 */
export class BudgetPaused extends Error {
  readonly budgetPause = true;
  constructor(readonly request: PauseRequest) {
    super('the next model call would cross a budget: paused for a person to raise it or stop the run');
  }
}

/** What a leaf activation ended with. Waiting for a child is signalled by `runChild` throwing. */
export type LeafOutcome =
  | { status: 'completed'; escalated?: boolean; output?: string }
  | { status: 'failed'; error: StoredError }
  | { status: 'paused'; requests: PauseRequest[] };

/** A child node to create when a leaf suspends. */
export interface SuspendChild {
  agent: string;
  path: string;
  branch: string | undefined;
}

/**
 * Thrown by `runChild` when the child has not ended: the engine commits the node as `waiting` (creating the
 * children listed here) and re-runs it when a child ends. Control flow, never a failure.
 */
/**
 * Thrown before a model call that a shared rate limit (or a provider's 429 retry-after) makes wait: the engine
 * gives the step back without a failure — its lease released, its worker free — and runs it again after
 * `waitMs` (its journal replays the calls it already made). Control flow, never a failure.
 */
/** A model call's slot of the shared rate limits (see {@link NodeRuntime.acquireModelSlot}). */
export interface ModelCallSlot {
  /**
   * For the model adapter ({@link GenerateOptions.onRateLimited}): the provider answered 429 with a retry-after;
   * every worker learns it and this step waits (throws {@link RateLimitWait}) instead of holding its worker.
   */
  onRateLimited(retryAfterMs: number): Promise<void>;
  /** Gives back the slot, settling its tokens on the response's usage. */
  settle(response?: ModelResponse): Promise<void>;
}

export class RateLimitWait extends Error {
  readonly suspend = true;
  constructor(
    /** The model id waited for. */
    readonly model: string,
    readonly waitMs: number,
    /** The limit that refused: a model id, a provider, `*`, with ` (app …)` for a per-app share. */
    readonly limit: string,
    readonly reason: 'rate' | 'concurrency' | 'retry-after',
  ) {
    super(`waiting for rate limit: ${model}, ~${Math.max(1, Math.round(waitMs / 1000))} s`);
    this.name = 'RateLimitWait';
  }
}

export class NodeSuspended extends Error {
  readonly suspend = true;
  constructor(readonly children: SuspendChild[]) {
    super('node suspended until its child nodes end');
  }

  /** Combines the suspensions of calls that ran side by side. */
  static merge(all: NodeSuspended[]): NodeSuspended {
    return new NodeSuspended(all.flatMap((s) => s.children));
  }
}
