import { AgentloomError } from '../../core/errors.js';
import type { AgentKind, BaseAgentOptions } from '../base-agent.js';
import { childBranch, parallelLane } from '../branch.js';
import {
  WorkflowAgent,
  type ChildStart,
  type ChildView,
  type WorkflowDecision,
  type WorkflowView,
} from './workflow.js';

/** Options of {@link ParallelAgent}. */
export type ParallelAgentOptions = BaseAgentOptions;

/**
 * Runs its sub-agents concurrently (SEMANTICS §2): each child is its own node (its own queued job) on branch
 * `<parent branch>.<name>.<index>` (inside a LoopAgent the name carries the iterations: `<name>#<i>`, see
 * branch.ts). Finished when every child settled: failed if any failed (with every child error attached), paused
 * if any paused, else completed (escalated if any child escalated).
 */
export class ParallelAgent extends WorkflowAgent {
  constructor(options: ParallelAgentOptions) {
    super(options);
    if (this.subAgents.length === 0) {
      throw new AgentloomError('VALIDATION', `ParallelAgent "${this.name}": subAgents must not be empty`, {
        details: { field: 'subAgents' },
      });
    }
  }

  override get kind(): AgentKind {
    return 'parallel';
  }

  /**
   * Before its first advance the checkpoint records no children, and every child starts in that advance: none
   * can exist yet. After it, each may.
   */
  override notStarted(checkpoint: Record<string, unknown>, _path: string): boolean {
    return checkpoint.children === undefined;
  }

  /**
   * A branch the checkpoint records as completed (a status it never leaves; written with the branch's end, under
   * this node's row lock), with its escalation (`escalated.<name>`, recorded only when true).
   */
  override childInCheckpoint(checkpoint: Record<string, unknown>, path: string): ChildView | undefined {
    const child = this.subAgents[this.childIndex(path)];
    const statuses = checkpoint.children as Record<string, unknown> | undefined;
    if (!child || statuses?.[child.name] !== 'completed') return undefined;
    const escalated = (checkpoint.escalated as Record<string, unknown> | undefined)?.[child.name] === true;
    return { path, status: 'completed', escalated };
  }

  advance(view: WorkflowView): WorkflowDecision {
    const start: ChildStart[] = [];
    const statuses: string[] = [];
    const errors: Record<string, unknown>[] = [];
    let escalated = false;
    const escalations: Record<string, true> = {};
    this.subAgents.forEach((child, index) => {
      const path = this.childPath(view, child);
      const node = view.child(path);
      if (!node) {
        start.push({
          agent: child,
          path,
          branch: childBranch(view.branch, parallelLane(this.name, view.path, index)),
        });
        statuses.push('pending');
        return;
      }
      statuses.push(node.status);
      if (node.escalated) {
        escalated = true;
        escalations[child.name] = true;
      }
      if (node.status === 'failed') errors.push({ agent: child.name, ...(node.error ?? {}) });
    });
    const settled = statuses.filter((s) => ['completed', 'paused', 'failed', 'cancelled'].includes(s)).length;
    const checkpoint = {
      children: Object.fromEntries(this.subAgents.map((c, i) => [c.name, statuses[i]])),
      ...(escalated ? { escalated: escalations } : {}),
    };
    if (settled < statuses.length) return { checkpoint, start, status: 'running', events: [] };
    if (errors.length > 0) {
      const message = `${errors.length} of ${statuses.length} branches of "${this.name}" failed: ${errors
        .map((e) => `${String(e.agent)}: ${String(e.message)}`)
        .join('; ')}`;
      return {
        checkpoint,
        start,
        status: 'failed',
        // One shared cause (e.g. LLM_CALL_BUDGET_EXCEEDED) keeps its code; mixed causes are BRANCH_FAILED.
        error: { code: sharedCode(errors) ?? 'BRANCH_FAILED', message, details: { errors } },
        events: [],
      };
    }
    if (statuses.includes('cancelled')) return { checkpoint, start, status: 'cancelled', events: [] };
    if (statuses.includes('paused')) return { checkpoint, start, status: 'paused', events: [] };
    return { checkpoint, start, status: 'completed', escalated, events: [this.endEvent()] };
  }
}

function sharedCode(errors: Record<string, unknown>[]): string | undefined {
  const codes = new Set(errors.map((e) => e.code));
  const [only] = [...codes];
  return codes.size === 1 && typeof only === 'string' ? only : undefined;
}
