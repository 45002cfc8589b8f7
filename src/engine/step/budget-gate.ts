/**
 * The budget check made before each model call (issue 35, README "Budgets"): which budgets apply to an agent's call
 * (the run's, and the subtree budgets of the agent and its ancestors, each as raised by answers), what each has
 * spent (the sum of its agents' `agent_spends` rows, committed with their calls' events), and the call's
 * reservation (the largest call of that agent so far in the run, or an estimate for its first). A call that would
 * cross one pauses the node with a `budget` request, or fails it with BUDGET_EXCEEDED under `onExceeded: 'fail'`.
 */
import { BudgetPaused } from '../../agents/context.js';
import type { BaseAgent } from '../../agents/base-agent.js';
import { newId } from '../../core/ids.js';
import type { ModelRequest } from '../../models/model.js';
import {
  addSpend,
  budgetExceeded,
  checkBudget,
  estimateTokens,
  reservationFor,
  ZERO_SPEND,
  BUDGET_LIMITS,
  type Budget,
  type BudgetCrossing,
  type Spend,
} from '../../models/budget/budget.js';
import type { ModelPrice } from '../../models/budget/pricing.js';
import type { Db } from '../../store/db/database.js';
import { budgetAndSpends, type AgentSpend } from '../../store/repos/spends.js';

type Json = Record<string, unknown>;

/** One budget that applies to a call: the run's (`scope: 'run'`) or an agent's subtree (`scope`: its name). */
export interface BudgetScope {
  scope: string;
  budget: Budget;
  /** The agents whose calls it counts; undefined: every agent of the run. */
  members: ReadonlySet<string> | undefined;
}

/** The run's budget as stored (`invocations.budget`), without its `agents` overrides; undefined when it has none. */
export function runBudgetOf(stored: Json | null | undefined): Budget | undefined {
  if (!stored) return undefined;
  const { agents: _agents, ...run } = stored;
  return Object.keys(run).length > 0 ? (run as Budget) : undefined;
}

/** Whether a budget has a limit (a budget of only `onExceeded` limits nothing). */
function limits(budget: Budget): boolean {
  return BUDGET_LIMITS.some((l) => budget[l] !== undefined);
}

/** The budgets that apply to a call of `agent`: the run's first, then the agent's own, then its ancestors'. */
export function budgetScopes(stored: Json | null | undefined, agent: BaseAgent | undefined): BudgetScope[] {
  const scopes: BudgetScope[] = [];
  const run = runBudgetOf(stored);
  if (run && limits(run)) scopes.push({ scope: 'run', budget: run, members: undefined });
  const raised = (stored?.agents ?? {}) as Record<string, Budget>;
  for (let a = agent; a; a = a.parentAgent) {
    if (!a.budget) continue;
    const budget = { ...a.budget, ...raised[a.name] };
    if (!limits(budget)) continue;
    scopes.push({ scope: a.name, budget, members: new Set([...a.descendants()].map((d) => d.name)) });
  }
  return scopes;
}

/** Whether any budget applies to the calls of `agent` (no budget: no check, no read). */
export function hasBudget(stored: Json | null | undefined, agent: BaseAgent | undefined): boolean {
  if (runBudgetOf(stored)) return true;
  for (let a = agent; a; a = a.parentAgent) if (a.budget) return true;
  return false;
}

/** What the agents in `members` (all, when undefined) spent. */
export function spentBy(spends: readonly AgentSpend[], members?: ReadonlySet<string>): Spend {
  return spends
    .filter((s) => !members || members.has(s.agent))
    .reduce((sum, s) => addSpend(sum, s.spent), { ...ZERO_SPEND });
}

/** The request's estimated input tokens (its text, instructions and tool declarations). */
function estimatedInput(request: ModelRequest): number {
  return estimateTokens(
    JSON.stringify([request.systemInstruction ?? '', request.contents, request.tools ?? []]),
  );
}

/** What the request's `generateContentConfig` caps the output at, when it does. */
function maxOutputOf(request: ModelRequest): number | undefined {
  const c = request.generateContentConfig ?? {};
  for (const key of ['maxOutputTokens', 'maxTokens', 'max_tokens', 'max_completion_tokens']) {
    const v = c[key];
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
  }
  return undefined;
}

/** The first budget the call would cross, with its scope, if any. */
export function firstCrossing(
  scopes: readonly BudgetScope[],
  spends: readonly AgentSpend[],
  reservation: Spend,
): { scope: BudgetScope; crossing: BudgetCrossing } | undefined {
  for (const scope of scopes) {
    const crossing = checkBudget(scope.budget, spentBy(spends, scope.members), reservation);
    if (crossing) return { scope, crossing };
  }
  return undefined;
}

/**
 * Checks the budgets before a call of `agent` (reads the stored budget and spends: a raise and other branches'
 * calls are seen). Throws {@link BudgetPaused} or BUDGET_EXCEEDED when the call may not start.
 */
export async function gateModelCall(
  db: Db,
  input: { invocationId: string; agent: BaseAgent | undefined; agentName: string; request: ModelRequest },
  price: ModelPrice | undefined,
): Promise<void> {
  const { budget: stored, spends } = await budgetAndSpends(db, input.invocationId);
  const scopes = budgetScopes(stored, input.agent);
  if (scopes.length === 0) return;
  const own = spends.find((s) => s.agent === input.agentName);
  const reservation = reservationFor(own?.largest, {
    estimatedInputTokens: estimatedInput(input.request),
    ...(maxOutputOf(input.request) === undefined ? {} : { maxOutputTokens: maxOutputOf(input.request) }),
    ...(price ? { price } : {}),
  });
  const found = firstCrossing(scopes, spends, reservation);
  if (!found) return;
  const { scope, crossing } = found;
  if ((scope.budget.onExceeded ?? 'pause') === 'fail') throw budgetExceeded(crossing);
  const callId = newId('budget');
  const where = scope.scope === 'run' ? 'budget' : `agent ${scope.scope}'s budget`;
  throw new BudgetPaused({
    callId,
    kind: 'budget',
    name: 'budget',
    args: {
      scope: scope.scope,
      ...crossing,
      totals: spentBy(spends, scope.members),
      budget: scope.budget,
      agent: input.agentName,
    },
    originalCallId: callId,
    hint: `the next model call of ${input.agentName} would cross ${where}.${crossing.limit} (${crossing.spent} spent + ${crossing.reserved} reserved > ${crossing.max}): raise the budget to continue, or stop the run`,
  });
}
