/**
 * The budget check made before each model call (README "Budgets"): which budgets apply to an agent's call
 * (the run's, and the subtree budgets of the agent and its ancestors, each as raised by answers), what each has
 * spent (the sum of its agents' `agent_spends` rows, committed with their calls' events), and the call's
 * reservation (the largest call of that agent so far in the run, or an estimate for its first). A call that would
 * cross one is sent with its output limit lowered to what is left, when at least MIN_OUTPUT_TOKENS are; otherwise
 * it pauses the node with a `budget` request, or fails it with BUDGET_EXCEEDED under `onExceeded: 'fail'`.
 */
import { BudgetPaused, type EmitOptions } from '../../../agents/context.js';
import { AgentloomError } from '../../../core/errors.js';
import type { Event } from '../../../core/event.js';
import type { BaseAgent } from '../../../agents/base-agent.js';
import { newId } from '../../../core/ids.js';
import type { ModelRequest } from '../../../models/model.js';
import {
  addSpend,
  budgetExceeded,
  checkBudget,
  estimateTokens,
  MIN_OUTPUT_TOKENS,
  OUTPUT_LIMIT_KEYS,
  outputRoom,
  reservationFor,
  withOutputLimit,
  ZERO_SPEND,
  BUDGET_LIMITS,
  type Budget,
  type BudgetCrossing,
  type Spend,
} from '../../../models/budget/budget.js';
import { spendOfUsage } from '../../../models/budget/budget.js';
import { priceFor, type ModelPrice, type PriceTable } from '../../../models/budget/pricing.js';
import type { Db } from '../../../store/db/database.js';
import { appendEventTx, type AppendEventInput } from '../../../store/repos/events.js';
import { reserveLlmCall } from '../../../store/repos/invocations.js';
import { budgetAndSpends, recordSpendTx, type AgentSpend } from '../../../store/repos/spends.js';
import type { Store } from '../../../store/store.js';
import type { RegisteredApp } from '../../apps/registry.js';

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
  for (const key of OUTPUT_LIMIT_KEYS) {
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
 * The output limit that fits a call whose reservation crosses a budget: the least {@link outputRoom} of the scopes,
 * when it is at least {@link MIN_OUTPUT_TOKENS} and the call, reserved with that output, crosses no budget.
 */
function fittedOutput(
  scopes: readonly BudgetScope[],
  spends: readonly AgentSpend[],
  reservation: Spend,
  options: { inputTokens: number; price: ModelPrice | undefined },
): number | undefined {
  let room = reservation.outputTokens;
  for (const scope of scopes) {
    room = Math.min(room, outputRoom(scope.budget, spentBy(spends, scope.members), reservation, options));
  }
  // One token less absorbs a rounding of the cost arithmetic (what is left in USD, divided by a per-token price).
  for (const limit of [Math.floor(room), Math.floor(room) - 1]) {
    if (limit < MIN_OUTPUT_TOKENS) return undefined;
    if (!firstCrossing(scopes, spends, withOutputLimit(reservation, limit, options))) return limit;
  }
  return undefined;
}

/**
 * Checks the budgets before a call of `agent` (reads the stored budget and spends: a raise and other branches'
 * calls are seen). Returns undefined when the call fits as it is, or the output limit (tokens) it must be sent with
 * to fit: its reservation does not, but at least {@link MIN_OUTPUT_TOKENS} output tokens are left. Throws
 * {@link BudgetPaused} or BUDGET_EXCEEDED when not even those fit.
 */
export async function gateModelCall(
  db: Db,
  input: { invocationId: string; agent: BaseAgent | undefined; agentName: string; request: ModelRequest },
  price: ModelPrice | undefined,
  outputReservation?: number,
): Promise<number | undefined> {
  const { budget: stored, spends } = await budgetAndSpends(db, input.invocationId);
  const scopes = budgetScopes(stored, input.agent);
  if (scopes.length === 0) return undefined;
  const own = spends.find((s) => s.agent === input.agentName);
  const inputTokens = estimatedInput(input.request);
  const reservation = reservationFor(own?.largest, {
    estimatedInputTokens: inputTokens,
    maxOutputTokens: maxOutputOf(input.request) ?? outputReservation,
    ...(price ? { price } : {}),
  });
  const found = firstCrossing(scopes, spends, reservation);
  if (!found) return undefined;
  const fitted = fittedOutput(scopes, spends, reservation, { inputTokens, price });
  if (fitted !== undefined) return fitted;
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

/** What the budget functions of a step need from the engine. */
export interface SpendDeps {
  store: Store;
  /** The apps served (an agent's subtree budgets are found in its tree). */
  apps?: ReadonlyMap<string, RegisteredApp>;
  /** Price overrides by model id (`createEngine({ prices })`), over the defaults. */
  prices?: PriceTable;
  /** Output tokens a first call reserves when its request sets no maxOutputTokens (`budgetOutputReservation`). */
  outputReservation?: number;
  /** Told what each model call spent, once its event committed (metrics). Must not throw. */
  onSpend?: (spend: { app: string; agent: string; model: string; spend: Spend }) => void;
}

/**
 * Before a model call of a step: the budgets (a call they hold back does not count against maxLlmCalls), then
 * `maxLlmCalls` (counted as the call starts, as always: LLM_CALL_BUDGET_EXCEEDED when used up). Returns the output
 * limit the budgets lowered the call to, if they did ({@link gateModelCall}).
 */
export async function checkModelCall(
  deps: SpendDeps,
  call: {
    invocationId: string;
    budget: Json | null | undefined;
    agent: BaseAgent | undefined;
    agentName: string;
    request: ModelRequest;
  },
): Promise<number | undefined> {
  const db = deps.store.db;
  let outputLimit: number | undefined;
  if (hasBudget(call.budget, call.agent)) {
    const model = typeof call.request.model === 'string' ? call.request.model : 'default';
    outputLimit = await gateModelCall(db, call, priceFor(model, deps.prices), deps.outputReservation);
  }
  const result = await reserveLlmCall(db, call.invocationId);
  if (!result.ok) {
    throw new AgentloomError(
      'LLM_CALL_BUDGET_EXCEEDED',
      `the invocation used its ${result.max} model calls (maxLlmCalls); raise maxLlmCalls when enqueuing or retrying`,
      { details: { used: result.used, max: result.max } },
    );
  }
  return outputLimit;
}

/**
 * What a model call's event spends, or undefined when it is not counted: calls are counted when they report usage
 * or a budget applies (a call without usage then counts as a call of 0 tokens).
 */
export function modelCallSpend(
  deps: SpendDeps,
  budget: Json | null | undefined,
  agent: BaseAgent | undefined,
  options: EmitOptions,
): { model: string; spend: Spend } | undefined {
  const call = options.modelCall;
  if (!call) return undefined;
  if (!call.usage && !hasBudget(budget, agent)) return undefined;
  return { model: call.model, spend: spendOfUsage(call.usage, priceFor(call.model, deps.prices)) };
}

/**
 * Stores a model call's event (fenced) and adds its spend to its agent's row in one transaction: a crash before the
 * commit loses both (the call is made again and counted once), after it neither (the call is never made again).
 */
export async function appendModelEvent(
  deps: SpendDeps,
  input: AppendEventInput,
  spent: { app: string; model: string; spend: Spend },
): Promise<Event> {
  const agent = input.event.author;
  const stored = await deps.store.transaction(async (tx) => {
    const appended = await appendEventTx(tx, input);
    await recordSpendTx(tx, input.invocationId as string, agent, spent.spend);
    return appended;
  });
  deps.onSpend?.({ ...spent, agent });
  return stored;
}
