/**
 * What model calls spent (for budgets): one `agent_spends` row per agent of an invocation, added to in the
 * transaction that stores the call's model event, and the invocation's `budget` (raised by answers to `budget`
 * pauses). The figures are plain numbers here; the budget arithmetic lives in models/budget/.
 */
import { eq, sql } from 'drizzle-orm';
import { AgentloomError } from '../../core/errors.js';
import type { Db } from '../db/database.js';
import { agentSpends, invocations } from '../db/schema.js';

/** The measures of a spend (the same fields as models/budget `Spend`). */
export interface SpendFigures {
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
}

/** One agent's spend in one invocation: its totals and its largest single call. */
export interface AgentSpend {
  agent: string;
  spent: SpendFigures;
  largest: SpendFigures;
}

type Json = Record<string, unknown>;

/**
 * Adds one call's spend to its agent's row, in the caller's transaction (the one that stores the call's model
 * event: both commit or neither does).
 */
export async function recordSpendTx(
  tx: Db,
  invocationId: string,
  agent: string,
  spend: SpendFigures,
): Promise<void> {
  await tx
    .insert(agentSpends)
    .values({
      invocationId,
      agent,
      modelCalls: spend.modelCalls,
      tokens: spend.tokens,
      inputTokens: spend.inputTokens,
      outputTokens: spend.outputTokens,
      costUsd: spend.costUsd,
      maxTokens: spend.tokens,
      maxInputTokens: spend.inputTokens,
      maxOutputTokens: spend.outputTokens,
      maxCostUsd: spend.costUsd,
    })
    .onConflictDoUpdate({
      target: [agentSpends.invocationId, agentSpends.agent],
      set: {
        modelCalls: sql`${agentSpends.modelCalls} + excluded.model_calls`,
        tokens: sql`${agentSpends.tokens} + excluded.tokens`,
        inputTokens: sql`${agentSpends.inputTokens} + excluded.input_tokens`,
        outputTokens: sql`${agentSpends.outputTokens} + excluded.output_tokens`,
        costUsd: sql`${agentSpends.costUsd} + excluded.cost_usd`,
        maxTokens: sql`greatest(${agentSpends.maxTokens}, excluded.max_tokens)`,
        maxInputTokens: sql`greatest(${agentSpends.maxInputTokens}, excluded.max_input_tokens)`,
        maxOutputTokens: sql`greatest(${agentSpends.maxOutputTokens}, excluded.max_output_tokens)`,
        maxCostUsd: sql`greatest(${agentSpends.maxCostUsd}, excluded.max_cost_usd)`,
        updatedAt: sql`now()`,
      },
    });
}

/** Every agent's spend in an invocation, by agent name. */
export async function agentSpendsOf(db: Db, invocationId: string): Promise<AgentSpend[]> {
  const rows = await db.select().from(agentSpends).where(eq(agentSpends.invocationId, invocationId));
  return rows.map(agentSpendOf);
}

/** An `agent_spends` row read as JSON (row_to_json). */
export function agentSpendFromJson(r: Json): AgentSpend {
  return agentSpendOf({
    agent: r.agent as string,
    modelCalls: Number(r.model_calls),
    tokens: Number(r.tokens),
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    costUsd: Number(r.cost_usd),
    maxTokens: Number(r.max_tokens),
    maxInputTokens: Number(r.max_input_tokens),
    maxOutputTokens: Number(r.max_output_tokens),
    maxCostUsd: Number(r.max_cost_usd),
  });
}

function agentSpendOf(r: Omit<typeof agentSpends.$inferSelect, 'invocationId' | 'updatedAt'>): AgentSpend {
  return {
    agent: r.agent,
    spent: {
      tokens: r.tokens,
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      costUsd: r.costUsd,
      modelCalls: r.modelCalls,
    },
    largest: {
      tokens: r.maxTokens,
      inputTokens: r.maxInputTokens,
      outputTokens: r.maxOutputTokens,
      costUsd: r.maxCostUsd,
      modelCalls: r.modelCalls > 0 ? 1 : 0,
    },
  };
}

/** The invocation's budget (as stored: the run's limits and `agents` overrides) and every agent's spend. */
export async function budgetAndSpends(
  db: Db,
  invocationId: string,
): Promise<{ budget: Json | null; spends: AgentSpend[] }> {
  const [row] = await db
    .select({ budget: invocations.budget })
    .from(invocations)
    .where(eq(invocations.id, invocationId));
  if (!row) {
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  }
  return { budget: row.budget, spends: await agentSpendsOf(db, invocationId) };
}

/** Replaces the invocation's stored budget (in the caller's transaction; the row is locked by the caller). */
export async function setBudgetTx(tx: Db, invocationId: string, budget: Json | null): Promise<void> {
  await tx
    .update(invocations)
    .set({ budget, updatedAt: sql`now()` })
    .where(eq(invocations.id, invocationId));
}
