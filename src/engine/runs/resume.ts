/**
 * Answering pauses: a function response to a pending call is stored as a user event on the call's node and
 * branch, the request is marked answered (who, when), and the node and its ancestors are made runnable — all
 * in one transaction. Answering the same call twice with the same answer is a no-op; with another, a conflict.
 */
import { isDeepStrictEqual } from 'node:util';
import { AgentloomError } from '../../core/errors.js';
import * as z from 'zod';
import { REQUEST_CONFIRMATION, REQUEST_CREDENTIAL, REQUEST_ELICITATION } from '../../agents/llm/journal.js';
import {
  askedAuth,
  credentialFromAnswer,
  credentialKeyOf,
  storedAnswer,
  type AuthCredential,
  type ToolAuth,
} from '../../tools/auth.js';
import { missingSecretKey, type CredentialVault } from '../auth/credential-vault.js';
import { zodIssues } from '../../core/validation.js';
import type { Db } from '../../store/db/database.js';
import { appendEventTx } from '../../store/repos/events.js';
import { getInvocation, setInvocationStatusTx } from '../../store/repos/invocations.js';
import { getNode, wakeNodeTx, type NodeJobRef } from '../../store/repos/nodes.js';
import type { RunHooks } from '../observe/run-hooks.js';
import { answerBudgetTx } from './budget-answers.js';
import { lockUnendedInvocationTx, unpauseAncestorsTx } from './unpause.js';
import {
  answerToolRequestTx,
  findToolRequest,
  pendingAuthRequests,
} from '../../store/repos/tool-requests.js';

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
  options: {
    invocationId?: string;
    by?: string;
    vault?: CredentialVault;
    /** The credential an OAuth2 callback redeemed (engine/runs/auth-answers.ts). */
    credential?: AuthCredential;
    /** Answer this call only (not the other calls waiting for the same credential). */
    alone?: boolean;
    /** Handles the run's end after the commit when a budget pause answered "stop" cancels it. */
    hooks?: RunHooks;
  },
): Promise<{ invocationId: string; jobs: NodeJobRef[]; stopped?: boolean }> {
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
  // An answer with a credential: the credential goes to the vault; the event and the row keep only what it was.
  const credential = request.kind === 'auth' ? credentialOf(request.request, input, options) : undefined;
  const response = credential ? storedAnswer(credential.auth, credential.credential) : input.response;
  if (request.status === 'answered') {
    if (isDeepStrictEqual(request.response, response)) return { invocationId, jobs: [] };
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
  if (request.kind === 'elicitation') checkElicitationAnswer(input.id, request.request, input.response);
  if (request.kind === 'budget')
    return answerBudgetTx(tx, request, input.response, options.by, options.hooks);
  const invocation = await lockUnendedInvocationTx(tx, invocationId);
  const node = await getNode(tx, invocationId, request.nodePath, true);
  if (!node) throw new AgentloomError('INTERNAL', `node ${request.nodePath} of a pending call is missing`);
  const requested = request.request as { name?: string; originalCallId?: string };
  const framework = FRAMEWORK_NAMES[request.kind];
  const name = framework ?? input.name ?? requested.name ?? 'tool';
  // The journal reads the answer to a request of the framework (a confirmation, an elicitation) under the
  // request's id, and a waiting call's under the call's own id (which differs from the request's when the call
  // was asked again after a cancel, see Journal.askId).
  const responseId = framework ? input.id : (requested.originalCallId ?? input.id);
  await appendEventTx(tx, {
    sessionId: invocation.sessionId,
    invocationId,
    nodePath: node.path,
    branch: node.branch ?? undefined,
    event: {
      author: 'user',
      content: {
        role: 'user',
        parts: [{ functionResponse: { id: responseId, name, response } }],
      },
    },
  });
  const owner = credential && {
    app: invocation.app,
    userId: invocation.userId,
    credentialKey: credentialKeyOf(credential.auth),
  };
  if (credential && owner && options.vault && !options.alone) {
    await options.vault.saveTx(tx, owner, credential.credential);
  }
  await answerToolRequestTx(tx, invocationId, input.id, response, options.by);
  // One consent serves every call of the user waiting for the same credential.
  const also =
    credential && owner && !options.alone
      ? await sameCredentialTx(tx, owner, input, credential, options)
      : [];
  if (node.status !== 'paused') return { invocationId, jobs: also };
  const job = await wakeNodeTx(tx, invocationId, node.path, 'pending');
  await unpauseAncestorsTx(tx, invocationId, node.parentPath);
  if (invocation.status === 'paused') await setInvocationStatusTx(tx, invocationId, 'running');
  return { invocationId, jobs: job ? [job, ...also] : also };
}

/**
 * Answers the other pending `auth` calls for the credential just stored — in this run (parallel branches) and in
 * the user's other live runs of the app: one consent serves them all. The jobs that resume them (each carries its
 * invocation; see {@link definitionsOf}).
 */
async function sameCredentialTx(
  tx: Db,
  owner: { app: string; userId: string; credentialKey: string },
  input: FunctionResponseInput,
  stored: { auth: ToolAuth; credential: AuthCredential },
  options: { by?: string; vault?: CredentialVault },
): Promise<NodeJobRef[]> {
  const jobs: NodeJobRef[] = [];
  for (const other of await pendingAuthRequests(tx, owner)) {
    if (other.callId === input.id) continue;
    const answered = await answerTx(
      tx,
      { id: other.callId, response: input.response },
      { ...options, invocationId: other.invocationId, credential: stored.credential, alone: true },
    );
    jobs.push(...answered.jobs);
  }
  return jobs;
}

/** Resume jobs grouped by the definition hash of their invocation (workers of that definition run them). */
export async function definitionsOf(tx: Db, jobs: NodeJobRef[]): Promise<Map<string, NodeJobRef[]>> {
  const byDefinition = new Map<string, NodeJobRef[]>();
  const hashes = new Map<string, string>();
  for (const job of jobs) {
    let hash = hashes.get(job.invocationId);
    if (hash === undefined) {
      hash = (await getInvocation(tx, job.invocationId))?.definitionHash ?? '';
      hashes.set(job.invocationId, hash);
    }
    byDefinition.set(hash, [...(byDefinition.get(hash) ?? []), job]);
  }
  return byDefinition;
}

/** The framework call a request of this kind answers, for kinds whose answer is not the tool call's response. */
const FRAMEWORK_NAMES: Record<string, string | undefined> = {
  confirmation: REQUEST_CONFIRMATION,
  elicitation: REQUEST_ELICITATION,
  auth: REQUEST_CREDENTIAL,
};

/**
 * The credential an answer to an auth request carries, checked against what was asked: the one redeemed from an
 * OAuth2 callback (engine/runs/auth-answers.ts), or the one the answer gives.
 */
function credentialOf(
  request: Record<string, unknown>,
  input: FunctionResponseInput,
  options: { vault?: CredentialVault; credential?: AuthCredential },
): { auth: ToolAuth; credential: AuthCredential } {
  if (!options.vault) throw missingSecretKey();
  const auth = askedAuth(request.auth);
  if (options.credential) return { auth, credential: options.credential };
  return { auth, credential: credentialFromAnswer(auth, input.response, input.id) };
}

/**
 * An elicitation's answer is MCP's ElicitResult: `{"action": "accept", "content": {…}}` with the object its
 * requested schema describes, or `{"action": "decline"}` / `{"action": "cancel"}`.
 */
function checkElicitationAnswer(
  callId: string,
  request: Record<string, unknown>,
  response: Record<string, unknown>,
): void {
  const { action, content } = response;
  if (action !== 'accept' && action !== 'decline' && action !== 'cancel') {
    throw new AgentloomError(
      'VALIDATION',
      `an elicitation is answered with {"action": "accept", "content": {…}} (the fields it asks for), {"action": "decline"} or {"action": "cancel"}`,
      { details: { field: 'response.action', callId } },
    );
  }
  const extra = Object.keys(response).filter((k) => k !== 'action' && k !== 'content');
  if (extra.length > 0 || (action !== 'accept' && content !== undefined)) {
    throw new AgentloomError(
      'VALIDATION',
      `an elicitation's answer has only "action" and, with "accept", "content" (not ${[...extra, ...(action !== 'accept' && content !== undefined ? ['content'] : [])].map((k) => `"${k}"`).join(', ')})`,
      { details: { field: 'response', callId } },
    );
  }
  if (action !== 'accept') return;
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    throw new AgentloomError(
      'VALIDATION',
      `"accept" needs "content": the object the elicitation asks for, e.g. {"action": "accept", "content": {"name": "Ada"}}`,
      { details: { field: 'response.content', callId } },
    );
  }
  const schema = (request.elicitation as { requestedSchema?: unknown } | undefined)?.requestedSchema;
  let parsed: { success: boolean; error?: z.ZodError } | undefined;
  try {
    parsed = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(content);
  } catch {
    // A schema zod cannot read: the server checks the content itself.
    return;
  }
  if (!parsed.success && parsed.error) {
    throw new AgentloomError(
      'VALIDATION',
      `the content does not match what the elicitation asks for: ${zodIssues(parsed.error)}`,
      { details: { field: 'response.content', callId } },
    );
  }
}
