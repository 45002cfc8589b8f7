/**
 * The read side of the engine's API: an invocation with its pending calls, its nodes, a session with its events,
 * as views (views.ts). Reads only; called by the Engine.
 */
import { AgentloomError, type StoredError } from '../../core/errors.js';
import type { Event } from '../../core/event.js';
import type { Db } from '../../store/db/database.js';
import { listEvents } from '../../store/repos/events.js';
import { getInvocation, type InvocationRow } from '../../store/repos/invocations.js';
import { invocationNodes } from '../../store/repos/nodes.js';
import { getSession } from '../../store/repos/sessions.js';
import { invocationWithPending, invocationWithPendingFromJson } from '../../store/repos/tool-requests.js';
import { invocationView, type InvocationView, type NodeView } from './views.js';

/** A session as `engine.getSession` returns it. */
export interface SessionView {
  id: string;
  app: string;
  userId: string;
  state: Record<string, unknown>;
  events: Event[];
}

/** The invocation's row; NOT_FOUND when there is none. */
export async function requireInvocation(db: Db, id: string): Promise<InvocationRow> {
  const row = await getInvocation(db, id);
  if (!row)
    throw new AgentloomError('NOT_FOUND', `invocation ${id} does not exist`, {
      details: { invocationId: id },
    });
  return row;
}

/** The invocation with its pending calls (CONTRACT.md `engine.get`). */
export async function readInvocation(db: Db, invocationId: string): Promise<InvocationView> {
  const found = await invocationWithPending(db, invocationId);
  if (!found)
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  return invocationView(found.inv, found.pending, found.spends);
}

/** The view a notification of the invocation's end carried (what {@link readInvocation} would read then). */
export function invocationViewFromNotice(notice: unknown): InvocationView | undefined {
  const found = invocationWithPendingFromJson(notice);
  return found && invocationView(found.inv, found.pending, found.spends);
}

/** The invocation's nodes (the checkpoint table), oldest first. */
export async function readNodes(db: Db, invocationId: string): Promise<NodeView[]> {
  await requireInvocation(db, invocationId);
  const rows = await invocationNodes(db, invocationId);
  return rows
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.path.localeCompare(b.path))
    .map((r) => ({
      path: r.path,
      agent: r.agent,
      kind: r.kind,
      status: r.status,
      branch: r.branch ?? undefined,
      checkpoint: r.checkpoint,
      escalated: r.escalated,
      attempt: r.attempt,
      parentPath: r.parentPath,
      output: r.output,
      error: (r.error as StoredError | null) ?? null,
      leaseOwner: r.leaseOwner,
      leaseExpiresAt: r.leaseExpiresAt,
      waiting: waitingOf(r),
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    }));
}

/**
 * What a running leaf that gave back its worker waits for (a model's rate limit), while it does: its lease
 * released and the wait not over. Null otherwise.
 */
function waitingOf(r: {
  status: string;
  waiting: unknown;
  leaseExpiresAt: Date | null;
}): NodeView['waiting'] {
  const w = r.waiting as { kind?: string; model?: string; limit?: string; until?: string } | null;
  if (r.status !== 'running' || !w?.until || w.kind !== 'rate_limit' || !w.model) return null;
  const until = new Date(w.until);
  const now = Date.now();
  if (!(until.getTime() > now) || (r.leaseExpiresAt && r.leaseExpiresAt.getTime() > now)) return null;
  return { kind: 'rate_limit', model: w.model, limit: w.limit ?? w.model, until };
}

/** A session with its state and events. */
export async function readSession(db: Db, sessionId: string): Promise<SessionView> {
  const session = await getSession(db, sessionId);
  if (!session)
    throw new AgentloomError('NOT_FOUND', `session ${sessionId} does not exist`, {
      details: { sessionId },
    });
  const events = await listEvents(db, sessionId);
  return { id: session.id, app: session.app, userId: session.userId, state: session.state, events };
}
