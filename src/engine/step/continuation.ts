/**
 * The sequential shortcut: a claimed leaf runs, and each leaf its commit claimed for this worker runs right after
 * it (no queue hop, no claim statement), each with a recovery wake-up due a lease later; a continued step stopped
 * by a fault is redelivered through the queue. Uses leaf-run.ts.
 */
import type { BaseAgent } from '../../agents/base-agent.js';
import { jobId } from '../../queue/step-queue.js';
import type { InvocationRow } from '../../store/repos/invocations.js';
import type { NodeRow } from '../../store/repos/nodes.js';
import { release, runClaimed } from './leaf-run.js';
import type { TrackedStep } from './local-steps.js';
import {
  agentOf,
  stepLog,
  type Continuation,
  type Known,
  type StepEnv,
  type StepResult,
} from './step-env.js';

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
    if (result.committed && current.continued) {
      const { path, wake } = current.node;
      env.local.committedHere.add(jobId({ invocationId: inv.id, path, wake }));
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

/** Takes over a continuation: tracked, its recovery wake-up queued; released instead when shutting down. */
async function continueWith(
  env: StepEnv,
  inv: InvocationRow,
  next: Continuation,
): Promise<ChainLink | undefined> {
  const step = env.local.track(inv.id, next.node.path);
  const recovery = { invocationId: inv.id, path: next.node.path, wake: next.node.wake };
  if (env.local.stopping) {
    step.finish();
    await release(env, inv, next.node, stepLog(env, inv, next.node.path, next.node.attempt));
    return undefined;
  }
  // Not awaited: it is due only a lease from now, so the step need not wait for the queue's round trip. A queue
  // kept in PostgreSQL gets none: there a wake-up is itself a durable write per step, and the reconciler (a query
  // over the same database) already wakes a leaf whose lease lapsed. Nor does the in-process queue: it dies with
  // this process, so its wake-up could never recover this process's crash (the reconciler does, at restart or in
  // another process over the same database).
  if (env.deps.queue.kind === 'redis') {
    env.deps.queue
      .enqueue([{ ...recovery, definition: inv.definitionHash }], { delayMs: env.deps.leaseMs })
      .catch((err: unknown) =>
        env.deps.logger.warn({ err }, 'enqueue failed; the reconciler will recover this step if it is lost'),
      );
  }
  return { node: next.node, agent: agentOf(env, inv, next.node), step, known: next };
}
