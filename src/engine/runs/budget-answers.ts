/**
 * Answering a `budget` pause (README "Budgets"): `{"action": "raise", "budget": {…}}` stores the new limits (of the
 * run, or of the agent whose subtree budget was crossed) and resumes every node paused on a budget of the run —
 * each runs again from its journal and makes the call it was held before, no stored call is repeated; `{"action":
 * "stop"}` cancels the run. Either is one transaction with the answer's audit row. No event is stored: a budget
 * pause is no call of the model's, so the conversation it sees is unchanged.
 */
import { AgentloomError } from '../../core/errors.js';
import { validateBudget, type Budget } from '../../models/budget/budget.js';
import type { Db } from '../../store/db/database.js';
import { getInvocation, setInvocationStatusTx, type InvocationRow } from '../../store/repos/invocations.js';
import { getNode, wakeNodeTx, type NodeJobRef } from '../../store/repos/nodes.js';
import { setBudgetTx } from '../../store/repos/spends.js';
import {
  answerToolRequestTx,
  findToolRequest,
  pendingToolRequests,
  type ToolRequestRow,
} from '../../store/repos/tool-requests.js';
import type { RunHooks } from '../observe/run-hooks.js';
import { cancelTx, type OutsideStops } from './control.js';
import { lockUnendedInvocationTx, unpauseAncestorsTx } from './unpause.js';

const HOW =
  'a budget pause is answered with {"action": "raise", "budget": {"tokens": 2000}} (the new limits: the run continues) or {"action": "stop"} (the run is cancelled)';

/** What answering a budget pause did: the jobs that resume nodes, or that it stopped (cancelled) the run. */
export interface BudgetAnswer {
  invocationId: string;
  jobs: NodeJobRef[];
  stopped: boolean;
}

/** Checks a budget answer; the error names the field and says what to write. */
export function checkBudgetAnswer(callId: string, response: Record<string, unknown>): void {
  const { action } = response;
  if (action === 'stop') return;
  if (action !== 'raise') {
    throw new AgentloomError('VALIDATION', HOW, { details: { field: 'response.action', callId } });
  }
  if (response.budget === undefined) {
    throw new AgentloomError('VALIDATION', `"raise" needs "budget": ${HOW}`, {
      details: { field: 'response.budget', callId },
    });
  }
  validateBudget(response.budget, 'response.budget');
}

/** Answers a pending `budget` request (its row locked by the caller), in the caller's transaction. */
export async function answerBudgetTx(
  tx: Db,
  request: ToolRequestRow,
  response: Record<string, unknown>,
  by: string | undefined,
  hooks?: RunHooks,
): Promise<BudgetAnswer> {
  checkBudgetAnswer(request.callId, response);
  const invocationId = request.invocationId;
  const invocation = await lockUnendedInvocationTx(tx, invocationId);
  await answerToolRequestTx(tx, invocationId, request.callId, response, by);
  if (response.action === 'stop') {
    await cancelTx(tx, invocationId, hooks);
    return { invocationId, jobs: [], stopped: true };
  }
  const scope = String((request.request.args as Record<string, unknown> | undefined)?.scope ?? 'run');
  await setBudgetTx(tx, invocationId, raised(invocation, scope, response.budget as Budget));
  // Every node of the run paused on a budget resumes (parallel branches share the run's budget): each checks the
  // budget again before its call, and pauses again if the raise is not enough for it.
  const others = (await pendingToolRequests(tx, invocationId)).filter(
    (r) => r.kind === 'budget' && r.callId !== request.callId,
  );
  for (const other of others) await answerToolRequestTx(tx, invocationId, other.callId, response, by);
  const jobs: NodeJobRef[] = [];
  for (const path of new Set([request.nodePath, ...others.map((o) => o.nodePath)])) {
    const node = await getNode(tx, invocationId, path, true);
    if (node?.status !== 'paused') continue;
    const job = await wakeNodeTx(tx, invocationId, path, 'pending');
    if (job) jobs.push(job);
    await unpauseAncestorsTx(tx, invocationId, node.parentPath);
  }
  if (invocation.status === 'paused') await setInvocationStatusTx(tx, invocationId, 'running');
  return { invocationId, jobs, stopped: false };
}

/** The stored budget with `limits` raised in `scope` ('run', or the agent whose subtree budget it is). */
function raised(invocation: InvocationRow, scope: string, limits: Budget): Record<string, unknown> {
  const stored = invocation.budget ?? {};
  if (scope === 'run') return { ...stored, ...limits };
  const agents = (stored.agents ?? {}) as Record<string, Budget>;
  return { ...stored, agents: { ...agents, [scope]: { ...agents[scope], ...limits } } };
}

/**
 * For an answer `{"action": "stop"}` to a pending budget pause: what engine.cancel stops outside the database
 * (remote A2A tasks), from `stopsOf`, to stop around the answer's commit as a cancel does. Undefined otherwise.
 */
export async function budgetStopOf(
  db: Db,
  response: { id: string; response?: unknown },
  invocationId: string | undefined,
  stopsOf: (inv: InvocationRow) => Promise<OutsideStops>,
): Promise<OutsideStops | undefined> {
  if ((response.response as { action?: unknown } | undefined)?.action !== 'stop') return undefined;
  const request = await findToolRequest(db, response.id, invocationId);
  if (request?.kind !== 'budget' || request.status !== 'pending') return undefined;
  const inv = await getInvocation(db, request.invocationId);
  return inv ? stopsOf(inv) : undefined;
}
