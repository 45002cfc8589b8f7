import { AgentloomError } from '../../core/errors.js';
import type { BaseAgentOptions } from '../base-agent.js';
import type { AgentKind } from '../base-agent.js';
import { walkSequence, WorkflowAgent, type WorkflowDecision, type WorkflowView } from './workflow.js';

/** Options of {@link SequentialAgent}. */
export type SequentialAgentOptions = BaseAgentOptions;

/**
 * Runs its sub-agents in order (SEMANTICS §2). Checkpoint `{completedSubAgents}`; a checkpoint event after each
 * child but the last; an escalating child ends the sequence and the escalation is forwarded to the parent.
 */
export class SequentialAgent extends WorkflowAgent {
  constructor(options: SequentialAgentOptions) {
    super(options);
    if (this.subAgents.length === 0) {
      throw new AgentloomError('VALIDATION', `SequentialAgent "${this.name}": subAgents must not be empty`, {
        details: { field: 'subAgents' },
      });
    }
  }

  override get kind(): AgentKind {
    return 'sequential';
  }

  /**
   * Children after the current one have not started: each starts when the one before it completes. Before the
   * first advance (no checkpoint stored yet) none has: the first starts in the advance that stores it.
   */
  override notStarted(checkpoint: Record<string, unknown>, path: string): boolean {
    if (checkpoint.completedSubAgents === undefined) return true;
    return this.childIndex(path) > Number(checkpoint.completedSubAgents);
  }

  advance(view: WorkflowView): WorkflowDecision {
    const from = Number(view.checkpoint.completedSubAgents ?? 0);
    const walk = walkSequence(this, view, from, (child) => this.childPath(view, child));
    const checkpoint = { completedSubAgents: walk.next };
    const events = [];
    // A checkpoint event for each child completed in this advance, except after the last child.
    for (let n = from + 1; n <= walk.next && n < this.subAgents.length; n++) {
      events.push(this.checkpointEvent({ completedSubAgents: n }));
    }
    if (walk.stop === 'running') {
      return { checkpoint, start: walk.start ? [walk.start] : [], status: 'running', events };
    }
    if (walk.stop === 'paused' || walk.stop === 'cancelled')
      return { checkpoint, start: [], status: walk.stop, events };
    if (walk.stop === 'failed') return { checkpoint, start: [], status: 'failed', error: walk.error, events };
    events.push(this.endEvent());
    return { checkpoint, start: [], status: 'completed', escalated: walk.stop === 'escalated', events };
  }
}
