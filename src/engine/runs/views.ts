import type { StoredError } from '../../core/errors.js';
import type { InvocationRow } from '../../store/repos/invocations.js';
import type { ToolRequestRow } from '../../store/repos/tool-requests.js';
import type { AgentSpend, SpendFigures } from '../../store/repos/spends.js';
import { authorizationUrlOf } from '../../tools/auth.js';
import { invocationTraceId } from '../../core/trace-context.js';

/** A paused call as users see it (CONTRACT.md `pending[]`). */
/**
 * What a pending call waits for: a human's confirmation, a long-running call's response, a decision on a call in
 * doubt after a crash, or the input an open call asks for (an MCP elicitation).
 */
export const PENDING_KINDS = [
  'confirmation',
  'long_running',
  'in_doubt',
  'elicitation',
  'auth',
  'budget',
] as const;
export type PendingKind = (typeof PENDING_KINDS)[number];

/** What an elicitation asks (see ToolContext.elicit). */
export interface ElicitationView {
  message: string;
  requestedSchema: Record<string, unknown>;
  source?: string;
}

export interface PendingCall {
  /** The id to answer. */
  callId: string;
  kind: PendingKind;
  name: string;
  args: Record<string, unknown>;
  hint?: string;
  payload?: unknown;
  nodePath: string;
  branch?: string;
  originalCallId: string;
  /** With kind `elicitation`: what it asks. */
  elicitation?: ElicitationView;
  /**
   * With kind `auth`: the credential asked for (`{authScheme, credentialKey}`; never a secret) and, for OAuth2,
   * `authorizationUrl`: where the user consents.
   */
  auth?: Record<string, unknown>;
}

/** An invocation as `engine.get` returns it. */
export interface InvocationView {
  id: string;
  app: string;
  sessionId: string;
  userId: string;
  status: 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
  escalated: boolean;
  output: string | null;
  error: StoredError | null;
  llmCalls: number;
  maxLlmCalls: number;
  /**
   * The run's budget (README "Budgets") as it stands: the app's merged with the invocation's, raised by answers
   * (`agents`: raised subtree budgets by agent name); null when the run has none.
   */
  budget: Record<string, unknown> | null;
  /** What the run's counted model calls spent, in total and by agent. */
  spent: SpentView;
  /** Hash of the agent tree the invocation was started with: only a worker serving that definition runs it. */
  definitionHash: string;
  /**
   * The run's trace id (32 hex digits): the caller's when a `traceparent` came with the run, else derived from the
   * invocation id. Every span of the run, in any process, is in this trace.
   */
  traceId: string;
  pending: PendingCall[];
  /** The invocation this one was forked from, and how (engine.fork); absent when it was not forked. */
  forkedFrom?: string;
  fork?: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** What a run's counted model calls spent (tokens, USD at the price table, calls), in total and by agent. */
export interface SpentView extends SpendFigures {
  byAgent: Record<string, SpendFigures>;
}

/** The spend of a run from its agents' rows. */
export function spentView(spends: readonly AgentSpend[]): SpentView {
  const total: SpendFigures = { tokens: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0 };
  const byAgent: Record<string, SpendFigures> = {};
  for (const s of spends) {
    byAgent[s.agent] = { ...s.spent };
    for (const key of Object.keys(total) as (keyof SpendFigures)[]) total[key] += s.spent[key];
  }
  return { ...total, byAgent };
}

/** Builds the public view of an invocation. */
export function invocationView(
  row: InvocationRow,
  requests: ToolRequestRow[],
  spends: readonly AgentSpend[] = [],
): InvocationView {
  return {
    id: row.id,
    app: row.app,
    sessionId: row.sessionId,
    userId: row.userId,
    status: row.status as InvocationView['status'],
    escalated: row.escalated,
    output: row.output,
    error: (row.error as StoredError | null) ?? null,
    llmCalls: row.llmCalls,
    maxLlmCalls: row.maxLlmCalls,
    budget: row.budget ?? null,
    spent: spentView(spends),
    definitionHash: row.definitionHash,
    traceId: invocationTraceId(row.id, row.traceparent),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    pending: requests.map(pendingCallOf),
    ...(row.forkedFrom ? { forkedFrom: row.forkedFrom, fork: row.fork ?? {} } : {}),
  };
}

/** A stored request as the call it pauses. */
export function pendingCallOf(r: ToolRequestRow): PendingCall {
  const req = r.request as {
    name?: string;
    args?: Record<string, unknown>;
    hint?: string;
    payload?: unknown;
    originalCallId?: string;
    branch?: string | null;
    elicitation?: ElicitationView;
    auth?: Record<string, unknown>;
  };
  return {
    callId: r.callId,
    kind: r.kind as PendingCall['kind'],
    name: req.name ?? '',
    args: req.args ?? {},
    ...(req.hint === undefined ? {} : { hint: req.hint }),
    ...(req.payload === undefined ? {} : { payload: req.payload }),
    nodePath: r.nodePath,
    ...(req.branch ? { branch: req.branch } : {}),
    originalCallId: req.originalCallId ?? r.callId,
    ...(req.elicitation ? { elicitation: req.elicitation } : {}),
    ...(req.auth ? { auth: authView(req.auth) } : {}),
  };
}

/** A node as `engine.nodes` returns it. */
export interface NodeView {
  path: string;
  agent: string;
  kind: string;
  status: string;
  branch?: string;
  checkpoint: Record<string, unknown>;
  escalated: boolean;
  attempt: number;
  /** The parent's path; null for the root. */
  parentPath: string | null;
  /** The node's final text, once it ended. */
  output: string | null;
  error: StoredError | null;
  /** The worker holding the node's lease, while a step of it runs (or until the lease lapses after a crash). */
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /**
   * What the node waits for while it holds no worker: a model's rate limit (the model, the limit that refused —
   * a model id, a provider, `*`, with ` (app …)` for a per-app share — and when it runs again). Null otherwise.
   */
  waiting: { kind: 'rate_limit'; model: string; limit: string; until: Date } | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A pending auth call's config as views show it: with the URL to open for OAuth2. */
function authView(config: Record<string, unknown>): Record<string, unknown> {
  const url = authorizationUrlOf(config);
  return url ? { ...config, authorizationUrl: url } : config;
}
