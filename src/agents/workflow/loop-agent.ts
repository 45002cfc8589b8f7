import { AgentloomError } from '../../core/errors.js';
import type { AgentKind, BaseAgentOptions } from '../base-agent.js';
import { walkSequence, WorkflowAgent, type WorkflowDecision, type WorkflowView } from './workflow.js';

/** Options of {@link LoopAgent}. */
export interface LoopAgentOptions extends BaseAgentOptions {
  /** Iterations at most (integer ≥ 1). Reaching it is a normal end. */
  maxIterations: number;
}

/**
 * Repeats its sub-agents in order (SEMANTICS §2) until one escalates (exit_loop) or `maxIterations` is reached.
 * Checkpoint `{iteration, completedSubAgents}`. The escalation is consumed here: the loop completes without
 * escalating, so outer loops and sequences continue.
 */
export class LoopAgent extends WorkflowAgent {
  readonly maxIterations: number;

  constructor(options: LoopAgentOptions) {
    super(options);
    if (this.subAgents.length === 0) {
      throw new AgentloomError('VALIDATION', `LoopAgent "${this.name}": subAgents must not be empty`, {
        details: { field: 'subAgents' },
      });
    }
    if (!Number.isInteger(options.maxIterations) || options.maxIterations < 1) {
      throw new AgentloomError(
        'VALIDATION',
        `LoopAgent "${this.name}": maxIterations must be an integer ≥ 1, got ${String(options.maxIterations)}`,
        { details: { field: 'maxIterations' } },
      );
    }
    this.maxIterations = options.maxIterations;
  }

  override get kind(): AgentKind {
    return 'loop';
  }

  override definition(): Record<string, unknown> {
    return { ...super.definition(), maxIterations: this.maxIterations };
  }

  /** Children after the current one of this iteration, and those of later iterations, have not started. */
  override notStarted(checkpoint: Record<string, unknown>, path: string): boolean {
    // Before the first advance (no checkpoint stored yet) no child has started.
    if (checkpoint.iteration === undefined) return true;
    const hash = path.lastIndexOf('#');
    if (hash < 0) return false;
    const iteration = Number(path.slice(hash + 1));
    const current = Number(checkpoint.iteration ?? 0);
    if (iteration !== current) return iteration > current;
    return this.childIndex(path) > Number(checkpoint.completedSubAgents ?? 0);
  }

  advance(view: WorkflowView): WorkflowDecision {
    let iteration = Number(view.checkpoint.iteration ?? 0);
    let completed = Number(view.checkpoint.completedSubAgents ?? 0);
    const events = [];
    for (;;) {
      const walk = walkSequence(this, view, completed, (child) => this.childPath(view, child, iteration));
      if (walk.next !== completed && walk.next < this.subAgents.length) {
        events.push(this.checkpointEvent({ iteration, completedSubAgents: walk.next }));
      }
      completed = walk.next;
      const checkpoint: Record<string, unknown> = { iteration, completedSubAgents: completed };
      if (walk.stop === 'running') {
        return { checkpoint, start: walk.start ? [walk.start] : [], status: 'running', events };
      }
      if (walk.stop === 'paused' || walk.stop === 'cancelled')
        return { checkpoint, start: [], status: walk.stop, events };
      if (walk.stop === 'failed')
        return { checkpoint, start: [], status: 'failed', error: walk.error, events };
      if (walk.stop === 'escalated') {
        // Consumed by this (innermost) loop: recorded in the checkpoint, not forwarded.
        events.push(this.endEvent());
        return {
          checkpoint: { ...checkpoint, exitedBy: 'escalation' },
          start: [],
          status: 'completed',
          escalated: false,
          events,
        };
      }
      // Iteration finished.
      if (iteration + 1 >= this.maxIterations) {
        events.push(this.endEvent());
        return {
          checkpoint: { ...checkpoint, exitedBy: 'maxIterations' },
          start: [],
          status: 'completed',
          escalated: false,
          events,
        };
      }
      iteration++;
      completed = 0;
      events.push(this.checkpointEvent({ iteration, completedSubAgents: 0 }));
    }
  }
}
