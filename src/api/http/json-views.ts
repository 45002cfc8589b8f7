/**
 * What the API sends: engine views turned into their JSON shapes (dates as ISO strings), agent trees, and the
 * opaque cursor of invocation pages.
 */
import * as z from 'zod';
import type { BaseAgent } from '../../agents/base-agent.js';
import { pendingCallOf, type InvocationView, type NodeView } from '../../engine/runs/views.js';
import type { InvocationRow } from '../../store/repos/invocations.js';
import type { PendingCallRow } from '../../store/repos/queries.js';
import type { ToolRequestRow } from '../../store/repos/tool-requests.js';
import { HttpError } from './errors.js';
import type { InvocationCursor } from '../../store/repos/queries.js';
import {
  PLAIN_TEXT,
  type AgentNodeJson,
  type InboxItemJson,
  type InvocationJson,
  type InvocationSummaryJson,
  type NodeJson,
  type ToolRequestJson,
} from './schemas.js';

/** An invocation as `GET /v1/invocations/:id` answers it (`traceUrl`: the template of its trace's link, if any). */
export function invocationJson(view: InvocationView, traceUrl?: string): InvocationJson {
  return {
    id: view.id,
    app: view.app,
    sessionId: view.sessionId,
    userId: view.userId,
    status: view.status,
    escalated: view.escalated,
    output: view.output,
    error: view.error,
    llmCalls: view.llmCalls,
    maxLlmCalls: view.maxLlmCalls,
    definitionHash: view.definitionHash,
    traceId: view.traceId,
    ...(traceUrl ? { traceUrl: traceUrl.replaceAll('{traceId}', view.traceId) } : {}),
    createdAt: view.createdAt.toISOString(),
    updatedAt: view.updatedAt.toISOString(),
    pending: view.pending,
    budget: view.budget,
    spent: view.spent,
    ...(view.forkedFrom ? { forkedFrom: view.forkedFrom, fork: view.fork ?? {} } : {}),
  };
}

/** An invocation as a list item (no pending calls: `GET` the invocation for those). */
export function invocationSummaryJson(row: InvocationRow): InvocationSummaryJson {
  const error = row.error as InvocationSummaryJson['error'];
  return {
    id: row.id,
    app: row.app,
    sessionId: row.sessionId,
    userId: row.userId,
    status: row.status as InvocationSummaryJson['status'],
    escalated: row.escalated,
    output: row.output,
    error: error ?? null,
    llmCalls: row.llmCalls,
    maxLlmCalls: row.maxLlmCalls,
    definitionHash: row.definitionHash,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    ...(row.forkedFrom ? { forkedFrom: row.forkedFrom, fork: row.fork ?? {} } : {}),
  };
}

/** A node of an invocation's tree (`GET /v1/invocations/:id/nodes`). */
export function nodeJson(node: NodeView): NodeJson {
  return {
    path: node.path,
    agent: node.agent,
    kind: node.kind,
    status: node.status,
    ...(node.branch === undefined ? {} : { branch: node.branch }),
    checkpoint: node.checkpoint,
    escalated: node.escalated,
    attempt: node.attempt,
    parentPath: node.parentPath,
    output: node.output,
    error: node.error,
    lease:
      node.leaseOwner && node.leaseExpiresAt
        ? { owner: node.leaseOwner, expiresAt: node.leaseExpiresAt.toISOString() }
        : null,
    waiting: node.waiting ? { ...node.waiting, until: node.waiting.until.toISOString() } : null,
    createdAt: node.createdAt.toISOString(),
    updatedAt: node.updatedAt.toISOString(),
  };
}

/** A call waiting in the inbox, with the invocation it pauses. */
export function inboxItemJson({ request, invocation }: PendingCallRow): InboxItemJson {
  return {
    ...pendingCallOf(request),
    invocationId: invocation.id,
    app: invocation.app,
    userId: invocation.userId,
    sessionId: invocation.sessionId,
    invocationStatus: invocation.status as InboxItemJson['invocationStatus'],
    since: request.createdAt.toISOString(),
  };
}

/** A request of an invocation's audit trail: the call, its state, and who answered it when. */
export function toolRequestJson(row: ToolRequestRow): ToolRequestJson {
  const { payload: _payload, ...call } = pendingCallOf(row);
  return {
    ...call,
    status: row.status as ToolRequestJson['status'],
    response: row.response ?? null,
    answeredBy: row.answeredBy,
    answeredAt: row.answeredAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

/** An agent and its sub-agents: name, kind, description, tool names (LLM agents). */
export function agentNodeJson(agent: BaseAgent): AgentNodeJson {
  const definition = agent.definition() as { tools?: unknown };
  const tools = Array.isArray(definition.tools) ? definition.tools.map(String) : undefined;
  return {
    name: agent.name,
    kind: agent.kind,
    description: agent.description,
    ...(tools ? { tools } : {}),
    children: agent.subAgents.map(agentNodeJson),
  };
}

/** A real instant that PostgreSQL accepts: the milliseconds part survives a round trip through Date. */
function isInstant(t: string): boolean {
  const ms = `${t.slice(0, 23)}Z`;
  const date = new Date(ms);
  return !Number.isNaN(date.getTime()) && date.getUTCFullYear() >= 1970 && date.toISOString() === ms;
}

const cursorSchema = z.object({
  t: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
    .refine(isInstant),
  i: z.string().min(1).max(256).regex(PLAIN_TEXT),
});

/** Encodes a page position as an opaque string. */
export function encodeCursor(cursor: InvocationCursor): string {
  return Buffer.from(JSON.stringify({ t: cursor.createdAt, i: cursor.id }), 'utf8').toString('base64url');
}

/** Decodes `?cursor=`; a cursor this server did not hand out is a 400 naming the field. */
export function decodeCursor(text: string): InvocationCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = cursorSchema.safeParse(parsed);
  if (!result.success) {
    throw new HttpError(
      400,
      'VALIDATION',
      'querystring.cursor: pass the nextCursor of a previous page as it was',
      {
        field: 'cursor',
        location: 'querystring',
      },
    );
  }
  return { createdAt: result.data.t, id: result.data.i };
}
