/**
 * Running a claimed leaf: the lease guard and renewal, the step deadline, the agent's run against its journal and
 * state, how it stopped (outcome, suspension, shutdown, cancel, fence, machinery fault), then its commit
 * (leaf-commit.ts) and the wake-ups. Where a claimed step runs. Uses leaf-commit.ts and node-runtime.ts.
 */
import type { Logger } from 'pino';
import type { BaseAgent } from '../../../agents/base-agent.js';
import { NodeSuspended, RateLimitWait, type LeafOutcome } from '../../../agents/context.js';
import { AgentloomError, hasErrorCode, isInfrastructureError, toStoredError } from '../../../core/errors.js';
import { listEvents } from '../../../store/repos/events.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import { parkLease, releaseLease, renewLease, type NodeRow } from '../../../store/repos/nodes.js';
import { readInvocationState } from '../../../store/repos/sessions.js';
import { cancelledCallIds, withdrawToolRequestsTx } from '../../../store/repos/tool-requests.js';
import { openElicitations } from '../../../agents/llm/journal.js';
import { beforeRunOutcome } from './before-run.js';
import { commitLeaf } from './leaf-commit.js';
import { SHUTDOWN } from '../env/local-steps.js';
import { LeaseGuard } from '../runtime/lease-guard.js';
import { replayInterposerFor } from '../runtime/replay-interposer.js';
import { EngineNodeRuntime } from '../runtime/node-runtime.js';
import type { StepRun } from '../../observe/observer.js';
import { RunTracing, type StepTrace } from '../../observe/run-trace.js';
import {
  stepLog,
  wake,
  type ContinuationSlot,
  type Known,
  type StepEnv,
  type StepResult,
} from '../env/step-env.js';

/** A leaf this worker claimed, to run now. */
export interface ClaimedLeaf {
  inv: InvocationRow;
  /** The node as claimed (its attempt is the fencing token). */
  claimed: NodeRow;
  agent: BaseAgent;
  controller: AbortController;
  /** What the claim statement already read (state, parent, lease start). */
  known: Known | undefined;
  /** Delivered by the queue (not continued into by the step before it on this worker): its wait is traced. */
  queued?: boolean;
}

/** Runs a claimed leaf and commits its outcome; the result names the leaf its commit claimed next, if any. */
export async function runClaimed(env: StepEnv, leaf: ClaimedLeaf): Promise<StepResult> {
  // The step's span (one per attempt): its model and tool calls and its log lines are inside it.
  const span = env.deps.tracing?.step(leaf.inv, leaf.claimed, leaf.queued ?? false);
  if (!span) return runStep(env, leaf, undefined);
  return span
    .run(() => runStep(env, leaf, span))
    .catch((err: unknown) => {
      RunTracing.fail(span, err);
      throw err;
    });
}

async function runStep(env: StepEnv, leaf: ClaimedLeaf, span: StepTrace | undefined): Promise<StepResult> {
  const { inv, claimed, agent, controller, known } = leaf;
  const { store } = env.deps;
  const log = stepLog(env, inv, claimed.path, claimed.attempt);
  log.debug('step claimed');
  const started = performance.now();
  const report = (outcome: StepRun['outcome'], detail?: LeafOutcome | NodeSuspended): void => {
    env.deps.observeStep?.({
      invocationId: inv.id,
      path: claimed.path,
      agent: claimed.agent,
      attempt: claimed.attempt,
      outcome,
      durationMs: performance.now() - started,
    });
    span?.end(outcome, detail);
  };
  const guard = guardStep(env, leaf, log);
  let runtime: EngineNodeRuntime | undefined;
  try {
    const first = claimed.attempt === 1;
    const [events, withdrawn, state] = await Promise.all([
      // A first attempt has no journal: only claimed attempts (and answers to their pauses) write a node's events.
      first ? [] : listEvents(store.db, inv.sessionId, { invocationId: inv.id, nodePath: claimed.path }),
      // Nor calls withdrawn by a cancel: a retried run asks them again (see Journal).
      first ? [] : cancelledCallIds(store.db, inv.id, claimed.path),
      known?.state ?? readInvocationState(store.db, inv.sessionId, { temp: inv.tempState }),
    ]);
    const stale = openElicitations(events);
    if (stale.length > 0) await store.transaction((tx) => withdrawToolRequestsTx(tx, inv.id, stale));
    const journal = { events, withdrawnCalls: new Set(withdrawn) };
    runtime = new EngineNodeRuntime(env.deps, inv, claimed, journal, state, controller.signal, guard.lease);
    runtime.replay = await replayInterposerFor(store.db, inv.fork, claimed.path);
    let outcome: LeafOutcome | NodeSuspended;
    try {
      // Raced with the abort: a model or tool call that ignores its signal cannot hold the step past a cancel,
      // a deadline or a shutdown (whatever it does afterwards is refused: every write checks the signal and the fence).
      const leafRun = async (rt: EngineNodeRuntime) =>
        (await beforeRunOutcome(env, inv, claimed.agent, events, rt)) ?? agent.runLeaf(rt);
      outcome = await raceAbort(leafRun(runtime), controller.signal);
    } catch (err) {
      const reason: unknown = controller.signal.reason;
      if (controller.signal.aborted && hasErrorCode(reason, 'TIMEOUT')) {
        outcome = { status: 'failed', error: toStoredError(reason) };
      } else if (err instanceof RateLimitWait && !controller.signal.aborted) {
        // Nothing committed, no failure, no attempt spent: the worker and the lease are given back and the step
        // runs again after the wait (its journal replays the calls it already made).
        await runtime.slots.release();
        await parkForRateLimit(env, inv, claimed, err, log);
        report('rate_limited');
        return {};
      } else if (err instanceof NodeSuspended) outcome = err;
      else if (controller.signal.aborted && reason === SHUTDOWN) {
        await release(env, inv, claimed, log);
        report('released');
        return {};
      } else if (isQuietStop(err, controller)) {
        logStop(log, err, reason);
        report(isSuperseded(err, reason) ? 'superseded' : 'stopped');
        return {};
      } else if (isInfrastructureError(err) || hasErrorCode(err, 'PLUGIN_ERROR')) {
        // A fault of the machinery, or a plugin that threw: nothing is committed and the queue runs the step again.
        throw err;
      } else outcome = { status: 'failed', error: toStoredError(err) };
    }
    const status = outcome instanceof NodeSuspended ? 'waiting' : outcome.status;
    const slot: ContinuationSlot = { allow: !env.local.stopping && !controller.signal.aborted };
    // The custom agent's last event, if not stored yet: it commits with the step's completion.
    const leafEvent = await runtime.takeDeferred();
    const endInvocation = runtime.endRequested;
    const jobs = await commitLeaf(env, {
      inv,
      claimed,
      outcome,
      endInvocation,
      slot,
      parent: known?.parent,
      leafEvent,
    });
    if (!jobs) {
      log.info({ status }, 'step commit refused: superseded');
      report('superseded');
      return {};
    }
    report(status as StepRun['outcome'], outcome);
    // Committed: the invocation's other steps, in any process, are told to stop now (their writes are fenced anyway).
    if (endInvocation && !(outcome instanceof NodeSuspended) && outcome.status === 'completed') {
      env.deps.onInvocationEnded(inv.id);
    }
    await wake(env, jobs, inv);
    // The run's end, if this commit wrote it: its trace and afterRunCallback, after the commit.
    await env.deps.runHooks?.afterCommit();
    log.debug({ status }, 'step committed');
    return slot.taken ? { next: slot.taken } : {};
  } finally {
    runtime?.discardDeferred();
    void runtime?.slots.release();
    guard.stop();
  }
}

/**
 * The step's guards while it runs: its lease, renewed every third of it (a lost lease aborts the step: FENCED), and
 * its deadline (`maxStepMs` of the agent or the engine: TIMEOUT). `stop` clears both.
 */
function guardStep(env: StepEnv, leaf: ClaimedLeaf, log: Logger): { lease: LeaseGuard; stop: () => void } {
  const { inv, claimed, agent, controller, known } = leaf;
  const { store, leaseMs } = env.deps;
  const lease = new LeaseGuard(
    () => renewLease(store.db, inv.id, claimed.path, claimed.attempt, leaseMs),
    leaseMs,
    () => controller.abort(new AgentloomError('FENCED', 'lease lost: another worker took the node over')),
    known?.leasedAt,
  );
  const renew = setInterval(
    () => {
      lease.renew().catch((err: unknown) => log.warn({ err }, 'lease renewal failed'));
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  const maxStepMs = agent.maxStepMs ?? env.deps.maxStepMs;
  const deadline = setTimeout(() => {
    controller.abort(
      new AgentloomError(
        'TIMEOUT',
        `step of agent "${agent.name}" ran longer than maxStepMs (${maxStepMs} ms); raise maxStepMs on the agent or the engine if it needs longer`,
        { details: { nodePath: claimed.path, maxStepMs } },
      ),
    );
  }, maxStepMs);
  return {
    lease,
    stop: () => {
      clearInterval(renew);
      clearTimeout(deadline);
    },
  };
}

/** Gives up a step stopped by shutdown: its lease ends now and a new wake-up lets any worker take it at once. */
export async function release(
  env: StepEnv,
  inv: InvocationRow,
  claimed: NodeRow,
  log: Logger,
): Promise<void> {
  const job = await releaseLease(env.deps.store.db, inv.id, claimed.path, claimed.attempt);
  if (job) await wake(env, [job], inv);
  log.info('step released at shutdown');
}

/**
 * Gives up a step that must wait for a model's rate limit: its lease ends now with what it waits for (the status
 * tree shows it), and its wake-up is enqueued delayed by the wait (plus a little jitter, so the steps waiting for
 * one window do not all come back at the same instant). A lost wake-up is re-woken by the reconciler after the wait.
 */
async function parkForRateLimit(
  env: StepEnv,
  inv: InvocationRow,
  claimed: NodeRow,
  wait: RateLimitWait,
  log: Logger,
): Promise<void> {
  const waitMs = Math.ceil(wait.waitMs + Math.random() * Math.min(1_000, wait.waitMs / 2 + 100));
  const job = await parkLease(env.deps.store.db, inv.id, claimed.path, claimed.attempt, waitMs, {
    kind: 'rate_limit',
    model: wait.model,
    limit: wait.limit,
    reason: wait.reason,
  });
  if (!job) return;
  try {
    await env.deps.queue.enqueue([{ ...job, definition: inv.definitionHash }], { delayMs: waitMs });
  } catch (err) {
    log.warn({ err }, 'enqueue failed; the reconciler will wake this node after its wait');
  }
  log.info(
    { model: wait.model, limit: wait.limit, reason: wait.reason, waitMs },
    `waiting for rate limit: ${wait.model}, ~${Math.max(1, Math.round(waitMs / 1000))} s`,
  );
}

/** Superseded (a zombie's attempt) rather than cancelled: worth a warning. */
function isSuperseded(err: unknown, reason: unknown): boolean {
  return hasErrorCode(reason, 'FENCED') || hasErrorCode(err, 'FENCED');
}

/** Logs why a step stopped without an outcome. */
function logStop(log: Logger, err: unknown, reason: unknown): void {
  if (isSuperseded(err, reason)) {
    log.warn({ err }, 'step superseded: another worker took the node over; this attempt writes nothing more');
  } else {
    log.info(
      { reason: (reason as Error | undefined)?.message },
      'step stopped: the invocation was cancelled or ended',
    );
  }
}

/** Settles with `work`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      },
    );
  });
}

/** A stop that is no failure of the step: aborted (cancel, close, fence), or refused by a fence or a cancel. */
function isQuietStop(err: unknown, controller: AbortController): boolean {
  if (controller.signal.aborted) return true;
  return err instanceof AgentloomError && (err.code === 'FENCED' || err.code === 'CANCELLED');
}
