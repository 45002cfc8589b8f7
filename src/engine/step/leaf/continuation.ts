/**
 * The sequential shortcut: a claimed leaf runs, and each leaf its commit claimed for this worker runs right after
 * it (no queue hop, no claim statement, no queue write); a continued step stopped by a fault is redelivered
 * through the queue, and one whose worker died is woken by the reconciler once its lease lapses. Uses leaf-run.ts.
 */
import type { BaseAgent } from '../../../agents/base-agent.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import type { NodeRow } from '../../../store/repos/nodes.js';
import { release, runClaimed } from './leaf-run.js';
import type { TrackedStep } from '../env/local-steps.js';
import {
  agentOf,
  stepLog,
  type Continuation,
  type Known,
  type StepEnv,
  type StepResult,
} from '../env/step-env.js';

/** Delay before a continued step stopped by a fault is offered again. */
const REDELIVERY_DELAY_MS = 100;

/** One leaf of a chain: the node as claimed, tracked in this process since before its claim. */
export interface ChainLink {
  node: NodeRow;
  agent: BaseAgent;
  step: TrackedStep;
  known: Known | undefined;
  /** Claimed by the commit of the step before it (not the job's own node). */
  continued?: boolean;
}

/**
 * Runs a claimed leaf, then each leaf this worker continued into (claimed in the commit of the one before).
 * Each step is tracked from before its claim to its end.
 */
export async function runChain(env: StepEnv, inv: InvocationRow, first: ChainLink): Promise<void> {
  let current: ChainLink | undefined = first;
  while (current) {
    let result: StepResult;
    try {
      result = await runClaimed(env, {
        inv,
        claimed: current.node,
        agent: current.agent,
        controller: current.step.controller,
        known: current.known,
        queued: current.continued !== true,
      });
    } catch (err) {
      // A continued step is not the job's own node: a fault of the machinery redelivers its own wake-up.
      if (!current.continued) throw err;
      return await redeliver(env, inv, current.node, err);
    } finally {
      current.step.finish();
    }
    if (!result.next) return;
    const next = await continueWith(env, inv, result.next);
    current = next && { ...next, continued: true };
  }
}

/** Runs a leaf claimed by a workflow job's advance (and the chain after it). */
export async function runContinuation(env: StepEnv, inv: InvocationRow, next: Continuation): Promise<void> {
  const first = await continueWith(env, inv, next);
  if (!first) return;
  await runChain(env, inv, { ...first, continued: true });
}

/**
 * A continued step stopped by a fault of the machinery (database, a crash): its wake-up goes through the queue
 * now, as a redelivery, and this worker (or another) re-claims it. When even that fails, the error goes to the
 * job's own redelivery and the reconciler wakes the node once its lease lapses.
 */
async function redeliver(env: StepEnv, inv: InvocationRow, node: NodeRow, err: unknown): Promise<void> {
  stepLog(env, inv, node.path, node.attempt).warn({ err }, 'continued step failed; redelivering its wake-up');
  try {
    await env.deps.queue.enqueue(
      [
        {
          invocationId: inv.id,
          path: node.path,
          wake: node.wake,
          redelivery: 1,
          definition: inv.definitionHash,
        },
      ],
      { delayMs: REDELIVERY_DELAY_MS },
    );
  } catch {
    throw err;
  }
}

/**
 * Takes over a continuation: tracked; released instead when shutting down. No wake-up is queued for it, in any
 * queue: its lease, written by the commit that claimed it, is its recovery. Should this process die, the reconciler
 * (one query over the nodes, every `reconcileIntervalMs`) wakes the node once the lease has lapsed — the same
 * bound a delayed wake-up due a lease later would give, give or take one reconciler interval, without a queue
 * write, a delivery and a stale claim per step (a recovery job per continued step was a third of the
 * Redis commands of a sequential run).
 */
async function continueWith(
  env: StepEnv,
  inv: InvocationRow,
  next: Continuation,
): Promise<ChainLink | undefined> {
  const step = env.local.track(inv.id, next.node.path);
  if (env.local.stopping) {
    step.finish();
    await release(env, inv, next.node, stepLog(env, inv, next.node.path, next.node.attempt));
    return undefined;
  }
  return { node: next.node, agent: agentOf(env, inv, next.node), step, known: next };
}
