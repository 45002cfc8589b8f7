/** Cancel and retry: state transitions of a whole invocation, each one transaction. */
import { isLeafKind, SETTLED, type NodeStatus } from '../../agents/workflow/workflow.js';
import { AgentloomError } from '../../core/errors.js';
import { validateBudget, type Budget } from '../../models/budget/budget.js';
import { setBudgetTx } from '../../store/repos/spends.js';
import type { Db } from '../../store/db/database.js';
import { getInvocation, setInvocationStatusTx, TERMINAL_INVOCATION } from '../../store/repos/invocations.js';
import {
  invocationNodes,
  updateNodeTx,
  wakeNodeTx,
  type NodeJobRef,
  type NodeRow,
} from '../../store/repos/nodes.js';
import { cancelToolRequestsTx } from '../../store/repos/tool-requests.js';
import { appendEventTx, listEvents } from '../../store/repos/events.js';
import type { InvocationRow } from '../../store/repos/invocations.js';
import type { BaseAgent } from '../../agents/base-agent.js';
import { RETRIED_MARK } from '../../agents/context.js';
import type { RegisteredApp } from '../apps/registry.js';
import type { RunHooks } from '../observe/run-hooks.js';

/**
 * Marks the invocation and every unfinished node cancelled; `hooks` handles the run's end (its trace, afterRunCallback)
 * once the caller has committed ({@link RunHooks.afterCommit}), never from inside this transaction, which may still
 * roll back. Returns false when it had already ended.
 */
export async function cancelTx(tx: Db, invocationId: string, hooks?: RunHooks): Promise<boolean> {
  const inv = await getInvocation(tx, invocationId, true);
  if (!inv)
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  if (TERMINAL_INVOCATION.has(inv.status)) return false;
  const nodes = await invocationNodes(tx, invocationId);
  for (const node of nodes) {
    if (!SETTLED.has(node.status as NodeStatus) || node.status === 'paused') {
      await updateNodeTx(tx, invocationId, node.path, {
        status: 'cancelled',
        leaseOwner: null,
        leaseExpiresAt: null,
      });
    }
  }
  await cancelToolRequestsTx(tx, invocationId);
  await setInvocationStatusTx(tx, invocationId, 'cancelled');
  hooks?.noteEnded(invocationId);
  return true;
}

/** The longest one node's outside work may take to stop (an unreachable remote): then it is logged and left. */
const STOP_OUTSIDE_MS = 30_000;

/** An unfinished leaf of an invocation being cancelled, and its agent. */
export interface OutsideWork {
  path: string;
  /** Paused (no step runs it) or running (its step is told to stop, and stops its remote work itself too). */
  paused: boolean;
  agent: BaseAgent;
}

/** The unfinished leaves of an invocation, with their agents: those that may have work outside to stop. */
export async function outsideWorkOf(
  db: Db,
  app: RegisteredApp | undefined,
  inv: InvocationRow,
): Promise<OutsideWork[]> {
  if (!app || TERMINAL_INVOCATION.has(inv.status)) return [];
  return (await invocationNodes(db, inv.id)).flatMap((node) => {
    const agent = app.agents.get(node.agent);
    const unfinished = !SETTLED.has(node.status as NodeStatus) || node.status === 'paused';
    if (!agent || !isLeafKind(node.kind) || !unfinished) return [];
    return [{ path: node.path, paused: node.status === 'paused', agent }];
  });
}

/**
 * Each of `work` stops what it started outside the engine (a remote agent's task: `tasks/cancel`), given its stored
 * events. For a paused node the cancel calls this before it commits: nothing else would stop it, and a crash in
 * between leaves our run as it was (the caller saw no answer and cancels again; stopping twice is harmless), never
 * our run cancelled and the remote work left waiting. A running node's is stopped after the commit (before it, the
 * step would take the remote's "canceled" for the remote's own failure), by its step and by the cancelling process.
 * A failure to stop (the remote unreachable, or slower than 30 s) is given to `onError` and holds nothing back.
 */
export async function stopOutsideWork(
  db: Db,
  inv: InvocationRow,
  work: readonly OutsideWork[],
  onError: (err: unknown, nodePath: string) => void,
): Promise<void> {
  for (const { path, agent } of work) {
    const journal = await listEvents(db, inv.sessionId, { invocationId: inv.id, nodePath: path });
    const stopped = agent.stopOutside(journal);
    const timer = AbortSignal.timeout(STOP_OUTSIDE_MS);
    const late = new Promise<never>((_, reject) =>
      timer.addEventListener('abort', () => reject(new Error(`not stopped within ${STOP_OUTSIDE_MS} ms`)), {
        once: true,
      }),
    );
    await Promise.race([stopped, late]).catch((err: unknown) => onError(err, path));
  }
}

/** What a cancel stops outside the database, split as {@link stopOutsideWork} says: paused before, running after. */
export interface OutsideStops {
  beforeCommit(): Promise<void>;
  afterCommit(): Promise<void>;
}

/** The outside work of `inv` (engine.cancel, a budget pause answered "stop"), ready to stop around the commit. */
export async function outsideStopsOf(
  db: Db,
  app: RegisteredApp | undefined,
  inv: InvocationRow,
  onError: (err: unknown, nodePath: string) => void,
): Promise<OutsideStops> {
  const work = await outsideWorkOf(db, app, inv);
  return {
    beforeCommit: () =>
      stopOutsideWork(
        db,
        inv,
        work.filter((w) => w.paused),
        onError,
      ),
    afterCommit: () =>
      stopOutsideWork(
        db,
        inv,
        work.filter((w) => !w.paused),
        onError,
      ),
  };
}

/** What a retry changes first: the model-call cap, the run's budget (raised field by field). */
export interface RetryOptions {
  maxLlmCalls?: number;
  budget?: Budget;
}

/**
 * Runs a failed or cancelled invocation again from its checkpoints: failed/cancelled nodes become runnable
 * (leaves re-run from their journal, so completed model and tool calls are not repeated).
 */
export async function retryTx(
  tx: Db,
  invocationId: string,
  options: RetryOptions = {},
): Promise<NodeJobRef[]> {
  const { maxLlmCalls } = options;
  const budget = options.budget === undefined ? undefined : validateBudget(options.budget, 'budget');
  const inv = await getInvocation(tx, invocationId, true);
  if (!inv)
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  if (inv.status !== 'failed' && inv.status !== 'cancelled') {
    throw new AgentloomError(
      'CONFLICT',
      `only failed or cancelled invocations can be retried; ${invocationId} is ${inv.status}`,
    );
  }
  // A run that failed with BUDGET_EXCEEDED (or was stopped at a budget pause) goes on with the limits raised.
  if (budget) await setBudgetTx(tx, invocationId, { ...inv.budget, ...budget });
  const nodes = await invocationNodes(tx, invocationId);
  const failed = new Set(
    nodes.filter((n) => n.status === 'failed' || n.status === 'cancelled').map((n) => n.path),
  );
  const jobs: NodeJobRef[] = [];
  for (const node of nodes) {
    if (!failed.has(node.path)) continue;
    const hasFailedChild = nodes.some((c) => c.parentPath === node.path && failed.has(c.path));
    const leaf = isLeafKind(node.kind);
    if (hasFailedChild) {
      await updateNodeTx(tx, invocationId, node.path, { status: leaf ? 'waiting' : 'running', error: null });
    } else {
      await updateNodeTx(tx, invocationId, node.path, { error: null });
      // A mark in the leaf's journal: what it started outside before (a remote task) is not followed again.
      if (leaf) await markRetriedTx(tx, inv, node);
      const job = await wakeNodeTx(tx, invocationId, node.path, 'pending');
      if (job) jobs.push(job);
    }
  }
  await setInvocationStatusTx(tx, invocationId, 'running', {
    error: null,
    ...(maxLlmCalls === undefined ? {} : { maxLlmCalls }),
  });
  return jobs;
}

async function markRetriedTx(tx: Db, inv: InvocationRow, node: NodeRow): Promise<void> {
  await appendEventTx(tx, {
    sessionId: inv.sessionId,
    invocationId: inv.id,
    nodePath: node.path,
    ...(node.branch ? { branch: node.branch } : {}),
    event: {
      author: node.agent,
      actions: { stateDelta: {}, artifactDelta: {}, agentState: { [RETRIED_MARK]: true } },
    },
  });
}
