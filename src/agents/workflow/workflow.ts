/**
 * The contract between workflow agents and the engine: the engine shows a workflow node its checkpoint and its
 * children's nodes; the agent's pure `advance` decides the next checkpoint, which children to start, and the
 * node's status. The engine commits the decision in one transaction.
 */
import type { StoredError } from '../../core/errors.js';
import type { NewEvent } from '../../core/event.js';
import { BaseAgent } from '../base-agent.js';

/** Statuses of a node. `waiting`: a leaf waiting for a child node it started. */
export type NodeStatus = 'pending' | 'running' | 'waiting' | 'paused' | 'completed' | 'failed' | 'cancelled';

/** Statuses after which a node does nothing more on its own. */
export const SETTLED: ReadonlySet<NodeStatus> = new Set(['paused', 'completed', 'failed', 'cancelled']);

/** A child node as its parent sees it. */
export interface ChildView {
  path: string;
  status: NodeStatus;
  escalated: boolean;
  error?: StoredError;
}

/** What a workflow node sees when it advances. */
export interface WorkflowView {
  path: string;
  branch: string | undefined;
  checkpoint: Record<string, unknown>;
  child(path: string): ChildView | undefined;
}

/** A child node to create and start. */
export interface ChildStart {
  agent: BaseAgent;
  path: string;
  branch: string | undefined;
}

/** The decision of one advance. */
export interface WorkflowDecision {
  checkpoint: Record<string, unknown>;
  start: ChildStart[];
  status: 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
  escalated?: boolean;
  error?: StoredError;
  /** Checkpoint / end-of-agent events, stored in the same transaction. */
  events: NewEvent[];
}

/** Base of the three workflow agents. */
export abstract class WorkflowAgent extends BaseAgent {
  /** Decides what happens next from the checkpoint and the children's nodes. Pure. */
  abstract advance(view: WorkflowView): WorkflowDecision;

  /**
   * True when the child at `path` cannot exist yet given the node's stored checkpoint (children start only in
   * the transaction that stores the checkpoint recording them), so the engine need not read it. False: unknown.
   */
  notStarted(_checkpoint: Record<string, unknown>, _path: string): boolean {
    return false;
  }

  /**
   * The child at `path` as the node's stored checkpoint proves it to be, when it records everything `advance`
   * needs of it (a status the child never leaves), so the engine need not read it. Undefined: unknown.
   */
  childInCheckpoint(_checkpoint: Record<string, unknown>, _path: string): ChildView | undefined {
    return undefined;
  }

  /** The index among this agent's sub-agents of the child at `path` (`<path>/<name>[#iteration]`), or -1. */
  protected childIndex(path: string): number {
    const segment = path.slice(path.lastIndexOf('/') + 1);
    const name = segment.includes('#') ? segment.slice(0, segment.indexOf('#')) : segment;
    return this.subAgents.findIndex((a) => a.name === name);
  }

  /** Path of a child node. */
  protected childPath(view: WorkflowView, child: BaseAgent, iteration?: number): string {
    return `${view.path}/${child.name}${iteration === undefined ? '' : `#${iteration}`}`;
  }

  /** A checkpoint event carrying `agentState` (and `endOfAgent` when finished). */
  protected checkpointEvent(agentState: Record<string, unknown>, endOfAgent = false): NewEvent {
    return {
      author: this.name,
      actions: { stateDelta: {}, artifactDelta: {}, agentState, ...(endOfAgent ? { endOfAgent } : {}) },
    };
  }

  /** An end-of-agent event. */
  protected endEvent(): NewEvent {
    return { author: this.name, actions: { stateDelta: {}, artifactDelta: {}, endOfAgent: true } };
  }
}

/**
 * Runs children in order from `from`, as a Sequential does and as one Loop iteration does. Returns how far it
 * got: `next` is the index of the first unfinished child; `stop` says why it stopped if it did.
 */
export function walkSequence(
  agent: WorkflowAgent,
  view: WorkflowView,
  from: number,
  pathOf: (child: BaseAgent) => string,
): {
  next: number;
  stop?: 'escalated' | 'paused' | 'failed' | 'cancelled' | 'running';
  error?: StoredError;
  start?: ChildStart;
} {
  let next = from;
  while (next < agent.subAgents.length) {
    const child = agent.subAgents[next] as BaseAgent;
    const path = pathOf(child);
    const node = view.child(path);
    if (!node) return { next, stop: 'running', start: { agent: child, path, branch: view.branch } };
    switch (node.status) {
      case 'completed':
        next++;
        if (node.escalated) return { next, stop: 'escalated' };
        continue;
      case 'paused':
      case 'failed':
      case 'cancelled':
        return { next, stop: node.status, error: node.error };
      default:
        return { next, stop: 'running' };
    }
  }
  return { next };
}

/** Whether a node kind is a leaf (runs an agent's code) rather than a workflow state machine. */
export function isLeafKind(kind: string): boolean {
  return kind === 'llm' || kind === 'custom';
}
