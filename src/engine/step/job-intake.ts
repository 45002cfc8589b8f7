/**
 * Job intake: a delivered job → what it needs read and claimed (its hint, one batched claim statement, or a read
 * of an untagged job) → a route: a claimed leaf to run or a workflow node to advance. Where a step is claimed.
 * A job of a definition this worker lacks is deferred. Calls store/ and the queue only.
 */
import { WorkflowAgent } from '../../agents/workflow/workflow.js';
import { Batcher } from '../../core/batcher.js';
import type { StepJob } from '../../queue/step-queue.js';
import {
  getInvocationWithNode,
  setInvocationStatusTx,
  TERMINAL_INVOCATION,
  type InvocationRow,
} from '../../store/repos/invocations.js';
import { claimLeafTx, type NodeRow } from '../../store/repos/nodes.js';
import { claimForJob, claimForJobs, type ClaimRequest, type JobClaim } from '../../store/step/step-claims.js';
import { isRetryableSqlError } from '../../store/db/tx.js';
import type { ChainLink } from './leaf/continuation.js';
import type { TrackedStep } from './env/local-steps.js';
import type { RegisteredApp } from '../apps/registry.js';
import { agentOf, parentInfo, stepLog, type JobHint, type Known, type StepEnv } from './env/step-env.js';
import type { WorkflowJob } from './workflow/workflow-advance.js';

/** Where a job goes: a claimed leaf to run (and the chain after it), or a workflow node to advance. */
export type Route =
  { kind: 'leaf'; inv: InvocationRow; link: ChainLink } | { kind: 'workflow'; job: WorkflowJob };

/** Reads and claims what delivered jobs name; one per scheduler. */
export class JobIntake {
  /** Invocations whose definition this worker lacks, logged once each. */
  private readonly deferredLogged = new Set<string>();
  private appsByHash: Map<string, RegisteredApp> | undefined;
  /** Claims of jobs that arrive together (a fan-out's) go to the database as one statement. */
  private readonly claims = new Batcher<0, ClaimRequest, JobClaim | undefined>((_, requests) =>
    this.claimBatch(requests),
  );

  constructor(private readonly env: StepEnv) {}

  /** The route of a job; undefined when there is nothing to do (ended, settled, deferred, or not claimable). */
  async route(job: StepJob): Promise<Route | undefined> {
    const app = job.definition === undefined ? undefined : this.appForHash(job.definition);
    if (!app) return this.routeUntagged(job);
    // A node this process just created or made runnable: a workflow node advanced without a first read (its
    // writes are guarded, so a stale hint only costs the normal path), a leaf run on the claim it carries.
    const hint = job.hint as JobHint | undefined;
    if (hint && hint.inv.id === job.invocationId && hint.inv.definitionHash === app.definitionHash) {
      const agent = app.agents.get(hint.agent);
      if (agent instanceof WorkflowAgent) {
        const { inv, node: seen, output, parent } = hint;
        return { kind: 'workflow', job: { inv, path: job.path, agent, seen, output, parent } };
      }
      const claimed = this.takeClaim(hint);
      if (agent && claimed && hint.node) {
        const step = this.env.local.track(job.invocationId, job.path);
        return { kind: 'leaf', inv: hint.inv, link: { node: hint.node, agent, step, known: claimed } };
      }
    }
    // One statement: the invocation, the node, and for a runnable leaf its claim and the state it sees.
    const step = this.env.local.track(job.invocationId, job.path);
    let claim: JobClaim | undefined;
    try {
      claim = await this.claims.submit(0, {
        invocationId: job.invocationId,
        path: job.path,
        definitionHash: app.definitionHash,
      });
    } catch (err) {
      step.finish();
      throw err;
    }
    if (!claim?.node || !claim.claimed) step.finish();
    if (!claim || TERMINAL_INVOCATION.has(claim.inv.status)) return undefined;
    const { inv, node } = claim;
    if (inv.definitionHash !== app.definitionHash)
      return this.defer(job, inv, this.env.deps.apps.get(inv.app));
    if (!node) return undefined;
    let agent;
    try {
      agent = agentOf(this.env, inv, node);
    } catch (err) {
      step.finish();
      throw err;
    }
    if (claim.claimed) {
      const known: Known = { state: claim.state ?? {}, parent: parentInfo(claim.parent) };
      return { kind: 'leaf', inv, link: { node, agent, step, known } };
    }
    if (agent instanceof WorkflowAgent)
      return { kind: 'workflow', job: { inv, path: node.path, agent, seen: node } };
    return undefined;
  }

  /** A job without a definition tag (or of a definition this worker lacks): read first, then decide. */
  private async routeUntagged(job: StepJob): Promise<Route | undefined> {
    const found = await getInvocationWithNode(this.env.deps.store.db, job.invocationId, job.path);
    if (!found || TERMINAL_INVOCATION.has(found.inv.status)) return undefined;
    const { inv, node } = found;
    const app = this.env.deps.apps.get(inv.app);
    if (!app || app.definitionHash !== inv.definitionHash) return this.defer(job, inv, app);
    if (!node) return undefined;
    const agent = agentOf(this.env, inv, node);
    if (agent instanceof WorkflowAgent) return { kind: 'workflow', job: { inv, path: node.path, agent } };
    // A duplicate delivery while this process runs the node: the running step owns it.
    if (this.env.local.get(inv.id, node.path)) return undefined;
    const step = this.env.local.track(inv.id, node.path);
    const claimed = await this.claimLeaf(inv, node, step);
    return claimed && { kind: 'leaf', inv, link: { node: claimed, agent, step, known: undefined } };
  }

  /** Claims a leaf on its own (the untagged path); `step` is finished when nothing was claimed. */
  private async claimLeaf(
    inv: InvocationRow,
    node: NodeRow,
    step: TrackedStep,
  ): Promise<NodeRow | undefined> {
    const { store, leaseMs, owner } = this.env.deps;
    let claimed: NodeRow | undefined;
    try {
      // This process runs no attempt of the node now, so a lease it still holds (a step stopped by a database
      // error) may be re-claimed at once.
      claimed =
        inv.status === 'queued'
          ? await store.transaction(async (tx) => {
              // Transaction: the claim and the invocation's first move to running.
              const row = await claimLeafTx(tx, inv.id, node.path, owner, leaseMs, true);
              if (row) await setInvocationStatusTx(tx, inv.id, 'running');
              return row;
            })
          : await claimLeafTx(store.db, inv.id, node.path, owner, leaseMs, true);
    } finally {
      if (!claimed) step.finish();
    }
    return claimed;
  }

  private async claimBatch(requests: ClaimRequest[]): Promise<(JobClaim | undefined)[]> {
    const { store, owner, leaseMs } = this.env.deps;
    const one = (r: ClaimRequest) => claimForJob(store.db, { ...r, owner, leaseMs, reclaimOwn: true });
    if (requests.length === 1) return [await one(requests[0] as ClaimRequest)];
    try {
      return await claimForJobs(store.db, owner, leaseMs, requests);
    } catch (err) {
      // A deadlock with another writer of these nodes: nothing was written; claim them one by one.
      if (isRetryableSqlError(err)) return Promise.all(requests.map(one));
      throw err;
    }
  }

  /**
   * The claim a job's hint carries, used once, and only while fresh: a job that waited in the queue past a
   * quarter of the lease claims its node again the usual way (its own lease is re-claimable, with a new attempt).
   */
  private takeClaim(hint: JobHint): Known | undefined {
    const claimed = hint.claimed;
    const { local, deps } = this.env;
    if (!claimed || local.usedClaims.has(claimed)) return undefined;
    local.usedClaims.add(claimed);
    if (local.stopping || Date.now() - claimed.at > deps.leaseMs / 4) return undefined;
    return {
      state: claimed.state,
      leasedAt: claimed.at,
      ...(claimed.parent ? { parent: claimed.parent } : {}),
    };
  }

  private appForHash(hash: string): RegisteredApp | undefined {
    this.appsByHash ??= new Map([...this.env.deps.apps.values()].map((app) => [app.definitionHash, app]));
    return this.appsByHash.get(hash);
  }

  /**
   * Rolling deploys: an invocation started with another definition of its app (or an app this worker does not
   * serve) is left for a worker that has it — offered again after a delay, never run against changed
   * checkpoints, never failed, never retried in a hot loop. Logged once per invocation.
   */
  private async defer(job: StepJob, inv: InvocationRow, app: RegisteredApp | undefined): Promise<undefined> {
    if (!this.deferredLogged.has(inv.id)) {
      this.deferredLogged.add(inv.id);
      stepLog(this.env, inv, job.path).warn(
        { app: inv.app, needs: inv.definitionHash, has: app?.definitionHash ?? null },
        app
          ? 'invocation needs another definition of its app; leaving it for a worker that has it'
          : 'invocation belongs to an app this worker does not serve; leaving it for a worker that does',
      );
    }
    const redelivery = (job.redelivery ?? 0) + 1;
    const delayMs = Math.min(this.env.deps.deferMs * 2 ** Math.min(redelivery - 1, 4), 60_000);
    await this.env.deps.queue.enqueue([{ ...job, redelivery }], { delayMs });
    return undefined;
  }
}
