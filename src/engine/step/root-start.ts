/**
 * A workflow root's first advance, planned at enqueue (distributed modes): when it needs nothing but its own empty
 * checkpoint (it writes no event and starts only leaves), the enqueue statement inserts the root already advanced
 * with those leaves, and the queue carries the leaves' wake-ups instead of the root's. The run then starts with
 * its first leaf's claim: no job, read or advance statement for the root (the same rule as a nested workflow
 * child inserted advanced, advance-plan.ts `childInserts`).
 */
import type { BaseAgent } from '../../agents/base-agent.js';
import { WorkflowAgent } from '../../agents/workflow/workflow.js';
import type { Json } from '../../store/repos/step-rows.js';
import { childInserts } from './workflow/advance-plan.js';

/** The root's rows as its first advance would write them: its checkpoint and its first leaves. */
export interface RootStart {
  checkpoint: Json;
  leaves: { path: string; agent: string; kind: string; branch: string | null }[];
}

/** The root's first advance when it can be written with the enqueue; undefined when the root's job must do it. */
export function rootStartAtEnqueue(root: BaseAgent): RootStart | undefined {
  if (!(root instanceof WorkflowAgent)) return undefined;
  const [row, ...children] = childInserts({ path: root.name, agent: root, branch: undefined });
  if (!row || row.status !== 'running' || children.length === 0) return undefined;
  return {
    checkpoint: row.checkpoint ?? {},
    leaves: children.map((c) => ({ path: c.path, agent: c.agent, kind: c.kind, branch: c.branch })),
  };
}
