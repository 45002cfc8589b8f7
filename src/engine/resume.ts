/**
 * Answering pauses: a function response to a pending call is stored as a user event on the call's node and
 * branch, the request is marked answered (who, when), and the node and its ancestors are made runnable — all
 * in one transaction. Answering the same call twice with the same answer is a no-op; with another, a conflict.
 */
import { isDeepStrictEqual } from 'node:util';
import { AgentloomError } from '../core/errors.js';
import { REQUEST_CONFIRMATION } from '../agents/journal.js';
import { isLeafKind } from '../agents/workflow.js';
import type { Db } from '../store/database.js';
import { appendEventTx } from '../store/events.js';
import { getInvocation, setInvocationStatusTx, TERMINAL_INVOCATION } from '../store/invocations.js';
import { getNode, updateNodeTx, wakeNodeTx, type NodeJobRef } from '../store/nodes.js';
import { answerToolRequestTx, findToolRequest } from '../store/tool-requests.js';

/** One answer. */
export interface FunctionResponseInput {
  id: string;
  name?: string;
  response: Record<string, unknown>;
}

/** Stores one answer; returns the job that resumes its node (if the node was paused). */
export async function answerTx(
  tx: Db,
  input: FunctionResponseInput,
  options: { invocationId?: string; by?: string },
): Promise<{ invocationId: string; jobs: NodeJobRef[] }> {
  if (typeof input?.id !== 'string' || input.id === '') {
    throw new AgentloomError(
      'VALIDATION',
      'functionResponses[].id must be the callId of a pending call (see pending[].callId)',
      {
        details: { field: 'functionResponses.id' },
      },
    );
  }
  if (typeof input.response !== 'object' || input.response === null || Array.isArray(input.response)) {
    throw new AgentloomError(
      'VALIDATION',
      `functionResponses[].response for "${input.id}" must be an object such as {"confirmed": true}`,
      {
        details: { field: 'functionResponses.response' },
      },
    );
  }
  const request = await findToolRequest(tx, input.id, options.invocationId, true);
  if (!request) {
    throw new AgentloomError(
      'NOT_FOUND',
      `no paused call has id "${input.id}"${options.invocationId ? ` in invocation ${options.invocationId}` : ''}`,
      {
        details: { callId: input.id },
      },
    );
  }
  const invocationId = request.invocationId;
  if (request.status === 'answered') {
    if (isDeepStrictEqual(request.response, input.response)) return { invocationId, jobs: [] };
    throw new AgentloomError(
      'CONFLICT',
      `call "${input.id}" was already answered by ${request.answeredBy ?? 'someone'} with a different response`,
      {
        details: {
          callId: input.id,
          response: request.response,
          answeredBy: request.answeredBy,
          answeredAt: request.answeredAt?.toISOString() ?? null,
        },
      },
    );
  }
  if (request.status !== 'pending') {
    throw new AgentloomError('CONFLICT', `call "${input.id}" can no longer be answered (${request.status})`, {
      details: { callId: input.id },
    });
  }
  if (request.kind === 'confirmation' && typeof input.response.confirmed !== 'boolean') {
    throw new AgentloomError(
      'VALIDATION',
      `a confirmation answer needs {"confirmed": true|false, "payload"?: …}`,
      {
        details: { field: 'response.confirmed', callId: input.id },
      },
    );
  }
  if (request.kind === 'in_doubt' && !['rerun', 'skip', 'fail'].includes(String(input.response.action))) {
    throw new AgentloomError(
      'VALIDATION',
      `an in-doubt call is answered with {"action": "rerun"} (run it again), {"action": "skip", "result": {…}} (use this result) or {"action": "fail", "message"?: "…"}`,
      { details: { field: 'response.action', callId: input.id } },
    );
  }
  const invocation = await getInvocation(tx, invocationId, true);
  if (!invocation || TERMINAL_INVOCATION.has(invocation.status)) {
    throw new AgentloomError(
      'CONFLICT',
      `invocation ${invocationId} has ended (${invocation?.status ?? 'missing'})`,
      { details: { invocationId } },
    );
  }
  const node = await getNode(tx, invocationId, request.nodePath, true);
  if (!node) throw new AgentloomError('INTERNAL', `node ${request.nodePath} of a pending call is missing`);
  const requested = request.request as { name?: string; originalCallId?: string };
  const name =
    request.kind === 'confirmation' ? REQUEST_CONFIRMATION : (input.name ?? requested.name ?? 'tool');
  // The journal reads a confirmation's answer under its request id, and a waiting call's under the call's own id
  // (which differs from the request's when the call was asked again after a cancel, see Journal.askId).
  const responseId = request.kind === 'confirmation' ? input.id : (requested.originalCallId ?? input.id);
  await appendEventTx(tx, {
    sessionId: invocation.sessionId,
    invocationId,
    nodePath: node.path,
    branch: node.branch ?? undefined,
    event: {
      author: 'user',
      content: {
        role: 'user',
        parts: [{ functionResponse: { id: responseId, name, response: input.response } }],
      },
    },
  });
  await answerToolRequestTx(tx, invocationId, input.id, input.response, options.by);
  if (node.status !== 'paused') return { invocationId, jobs: [] };
  const job = await wakeNodeTx(tx, invocationId, node.path, 'pending');
  await unpauseAncestorsTx(tx, invocationId, node.parentPath);
  if (invocation.status === 'paused') await setInvocationStatusTx(tx, invocationId, 'running');
  return { invocationId, jobs: job ? [job] : [] };
}

/** Paused ancestors go back to waiting on their children: workflow nodes `running`, leaves `waiting`. */
async function unpauseAncestorsTx(tx: Db, invocationId: string, parentPath: string | null): Promise<void> {
  for (let path = parentPath; path !== null;) {
    const node = await getNode(tx, invocationId, path, true);
    if (!node) return;
    if (node.status === 'paused') {
      const leaf = isLeafKind(node.kind);
      await updateNodeTx(tx, invocationId, path, { status: leaf ? 'waiting' : 'running' });
    }
    path = node.parentPath;
  }
}
