/**
 * Executing a step (ARCHITECTURE.md): the scheduler is the dispatcher of a worker's step jobs. A job is routed by
 * job-intake.ts (claimed leaf, or workflow node), a leaf runs through continuation.ts → leaf-run.ts → leaf-commit.ts,
 * a workflow node advances through workflow-advance.ts (→ join.ts, advance-plan.ts). Postgres decides; the queue
 * only wakes. Read the files in that order, all in src/engine/step/ (README.md there), to follow a job from `handle`
 * to its commit; its statements are in src/store/step/.
 */
import { AgentloomError } from '../../core/errors.js';
import type { StepJob } from '../../queue/step-queue.js';
import { branchEndBatcher } from './workflow/branch-end.js';
import { runChain, runContinuation } from './leaf/continuation.js';
import { JobIntake } from './job-intake.js';
import { LocalSteps } from './env/local-steps.js';
import type { SchedulerDeps, StepEnv } from './env/step-env.js';
import { advanceWorkflow } from './workflow/workflow-advance.js';

/** Runs step jobs. One per engine; stateless between jobs except for the steps it is running. */
export class Scheduler {
  private readonly env: StepEnv;
  private readonly intake: JobIntake;

  constructor(deps: SchedulerDeps) {
    this.env = { deps, local: new LocalSteps(), branchEnds: branchEndBatcher(deps.store) };
    this.intake = new JobIntake(this.env);
  }

  /** Handles one job. Rejects only for failures the queue should redeliver (infrastructure, crashes). */
  async handle(job: StepJob): Promise<void> {
    const { local } = this.env;
    // A wake-up for a node this process is running (a duplicate delivery, or the reconciler's wake-up of a step
    // it continued into): the running step owns the node, and the job stays active until it ends (so the queue's
    // stall detection covers it).
    const running = local.get(job.invocationId, job.path);
    if (running) return running.done;
    const route = await this.intake.route(job);
    if (route?.kind === 'leaf') return runChain(this.env, route.inv, route.link);
    if (route?.kind === 'workflow') {
      const next = await advanceWorkflow(this.env, route.job);
      if (next) await runContinuation(this.env, route.job.inv, next);
    }
  }

  /** Aborts the in-flight steps of an invocation in this process (model and tool calls see `signal`). */
  abort(
    invocationId: string,
    reason: unknown = new AgentloomError('CANCELLED', 'the invocation was cancelled'),
  ): void {
    this.env.local.abort(invocationId, reason);
  }

  /** Aborts every in-flight step (abrupt close). */
  abortAll(): void {
    this.env.local.abortAll();
  }

  /** Stops every in-flight step and releases its lease so another worker takes it over at once (shutdown). */
  releaseAll(): void {
    this.env.local.releaseAll();
  }

  /** How many steps this process is running. */
  get runningSteps(): number {
    return this.env.local.size;
  }
}
