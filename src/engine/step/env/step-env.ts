/**
 * What every role of the step machinery shares (scheduler → job-intake → continuation → leaf-run → leaf-commit →
 * workflow-advance → join → advance-plan): the scheduler's dependencies, the facts a step carries from the
 * statement that claimed it, and the small helpers for logging and wake-ups. Imports nothing of the machinery.
 */
import type { Logger } from 'pino';
import type { BaseAgent } from '../../../agents/base-agent.js';
import { WorkflowAgent } from '../../../agents/workflow/workflow.js';
import type { Batcher } from '../../../core/batcher.js';
import { AgentloomError } from '../../../core/errors.js';
import { lazyChild } from '../../../core/lazy-logger.js';
import type { StepJob, StepQueue } from '../../../queue/step-queue.js';
import type { InvocationRow } from '../../../store/repos/invocations.js';
import type { NodeJobRef, NodeRow } from '../../../store/repos/nodes.js';
import type { CompleteBranch, ParentBranchEnd } from '../../../store/step/branch-ends.js';
import type { Store } from '../../../store/store.js';
import type { LocalSteps } from './local-steps.js';
import type { NodeRuntimeDeps } from '../runtime/node-runtime.js';
import type { StepRun } from '../../observe/observer.js';
import type { RunTracing } from '../../observe/run-trace.js';
import type { RegisteredApp } from '../../apps/registry.js';

/** Dependencies of the scheduler. */
export interface SchedulerDeps extends NodeRuntimeDeps {
  store: Store;
  queue: StepQueue;
  apps: ReadonlyMap<string, RegisteredApp>;
  logger: Logger;
  /** Identifies this worker in leases. */
  owner: string;
  leaseMs: number;
  /** Default step deadline (ms); an agent's `maxStepMs` overrides it. */
  maxStepMs: number;
  /** Called after a step's `endInvocation` committed: stop the invocation's other steps everywhere. */
  onInvocationEnded: (invocationId: string) => void;
  /** Delay before a job this worker cannot run (another definition of its app) is offered again. */
  deferMs: number;
  /** Told how each claimed step ended (metrics). Must not throw. */
  observeStep?: (run: StepRun) => void;
  /** The tracing of runs, when an OpenTelemetry SDK is registered (observe/run-trace.ts). */
  tracing?: RunTracing;
}

/** A branch's end as the batcher answers it: with the join's output when known (see {@link JobHint.output}). */
export type BranchOutcome = (CompleteBranch & { output?: string }) | 'retry';

/** The step machinery of one engine: its dependencies, the steps of this process, and the batched branch ends. */
export interface StepEnv {
  readonly deps: SchedulerDeps;
  readonly local: LocalSteps;
  /** Ends of branches of one parallel parent that finish together, written as one statement (see branch-end.ts). */
  readonly branchEnds: Batcher<string, ParentBranchEnd, BranchOutcome>;
}

export type Json = Record<string, unknown>;

/** A workflow parent as a step last saw it. */
export interface ParentInfo {
  path: string;
  agent: string;
  branch: string | null;
  checkpoint: Json;
}

/** What a claimed step already knows from the statement that claimed it, so it need not read it again. */
export interface Known {
  /** The state the step sees. */
  state: Json;
  /** The parent as that statement left it: lets the completion advance it in the same statement. */
  parent?: ParentInfo;
  /** When the claim's lease started (Date.now()), when it is not now. */
  leasedAt?: number;
}

/**
 * The next leaf of a sequence, claimed by this worker in the transaction that made it runnable (ARCHITECTURE
 * "sequential continuation"): it runs here at once, with no queue hop and no separate claim. Its wake-up still
 * goes through the queue, delayed by a lease, so a crash of this worker is recovered like any other.
 */
export interface Continuation extends Known {
  node: NodeRow;
}

/** Whether a transaction may claim the next leaf for this worker, and the one it claimed. */
export interface ContinuationSlot {
  allow: boolean;
  taken?: Continuation;
}

/** How a claimed step ended: the leaf its commit continued into, if any. */
export interface StepResult {
  next?: Continuation;
}

/**
 * A job's hint (StepJob.hint) from this process: the invocation and the workflow node it just created or made
 * runnable (the node as written, when known), so the job advances it without reading it first.
 */
export interface JobHint {
  inv: InvocationRow;
  agent: string;
  node?: NodeRow;
  /**
   * A parallel join's output when it completes, known from the batch of branch ends that settled its last
   * branch (that batch stored the newest events under it): the join then needs no read of its events.
   */
  output?: string;
  /** The node's parent as the batch that made the join runnable read it (a join then ends and advances in one). */
  parent?: NodeRow;
  /**
   * A leaf this process claimed in the statement that created it (a fan-out's branch, see advance-plan.ts
   * `fanClaims`): the job runs it without a claim of its own, while the claim is fresh.
   */
  claimed?: Known & { at: number };
}

/** Node kinds that are advanced, never claimed. */
export const WORKFLOW_KINDS: ReadonlySet<string> = new Set(['sequential', 'parallel', 'loop']);

export const parentInfo = (row: NodeRow | undefined): ParentInfo | undefined =>
  row && { path: row.path, agent: row.agent, branch: row.branch, checkpoint: row.checkpoint };

/** The kind stored on a node row. */
export function nodeKind(agent: BaseAgent): string {
  return agent.kind;
}

/** The agent a node runs; DEFINITION_MISMATCH when the app has no such agent. */
export function agentOf(env: StepEnv, inv: InvocationRow, node: NodeRow): BaseAgent {
  const agent = env.deps.apps.get(inv.app)?.agents.get(node.agent);
  if (!agent)
    throw new AgentloomError('DEFINITION_MISMATCH', `agent "${node.agent}" is not in app "${inv.app}"`);
  return agent;
}

/** The workflow agent named `name` in `inv`'s app, if it is one. */
export function workflowAgentOf(env: StepEnv, inv: InvocationRow, name: string): WorkflowAgent | undefined {
  const agent = env.deps.apps.get(inv.app)?.agents.get(name);
  return agent instanceof WorkflowAgent ? agent : undefined;
}

/** A logger for one step: invocation, node path and attempt on every line (made when a line is logged). */
export function stepLog(env: StepEnv, inv: InvocationRow, path: string, attempt?: number): Logger {
  return lazyChild(env.deps.logger, {
    invocationId: inv.id,
    nodePath: path,
    ...(attempt === undefined ? {} : { attempt }),
  });
}

/**
 * Enqueues wake-ups after a commit. Run here instead (the queue's `LocalSlots`): the jobs of leaves this process
 * claimed as it created them, and — while a slot is idle — those of workflow nodes it has just made runnable and
 * knows as written (a parallel's join, a nested workflow it created): their advance is then one statement without
 * a read, with no trip through the queue. Such a node is `pending`, so should this process die before advancing
 * it the reconciler wakes it, as it does a lost wake-up. A failure is logged, not thrown: the commit stands and
 * the reconciler re-wakes.
 */
export async function wake(env: StepEnv, jobs: NodeJobRef[], inv: InvocationRow): Promise<void> {
  if (jobs.length === 0) return;
  const { here } = env.deps.queue;
  const claimed: StepJob[] = [];
  const known: StepJob[] = [];
  const queued: StepJob[] = [];
  for (const job of jobs) {
    const tagged = { ...job, definition: inv.definitionHash };
    const hint = job.hint as JobHint | undefined;
    if (here && hint?.claimed) claimed.push(tagged);
    else if (here && hint) known.push(tagged);
    else queued.push(tagged);
  }
  // The claimed leaves first: their slots were counted when they were claimed; the known nodes take what is left.
  if (claimed.length > 0) here?.run(claimed);
  const idle = known.length > 0 && here ? here.idle(inv.definitionHash) : 0;
  if (idle > 0) here?.run(known.slice(0, idle));
  queued.push(...known.slice(idle));
  if (queued.length === 0) return;
  try {
    await env.deps.queue.enqueue(queued);
  } catch (err) {
    env.deps.logger.warn({ err, jobs: jobs.length }, 'enqueue failed; the reconciler will wake these nodes');
  }
}
