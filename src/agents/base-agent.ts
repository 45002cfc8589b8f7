/**
 * BaseAgent: the tree every agent lives in. Leaf agents (LlmAgent, custom agents) run inside one node and emit
 * events; workflow agents (Sequential, Parallel, Loop) are state machines over their node's checkpoint.
 */
import { AgentloomError } from '../core/errors.js';
import { createEvent, type Event } from '../core/event.js';
import { validateBudget, type Budget } from '../models/budget/budget.js';
import type { InvocationContext, LeafOutcome, NodeRuntime } from './context.js';

/** What kind of node an agent becomes. */
export type AgentKind = 'llm' | 'custom' | 'sequential' | 'parallel' | 'loop';

/** Options every agent accepts. */
export interface BaseAgentOptions {
  /** A JS identifier, unique in the tree, not `user`. */
  name: string;
  description?: string;
  subAgents?: BaseAgent[];
  /**
   * Longest a step of this agent may run (ms) before it fails with TIMEOUT and gives up its lease, so a hung
   * model or tool call cannot hold a worker forever. Default: the engine's `maxStepMs` (10 minutes).
   */
  maxStepMs?: number;
  /**
   * A budget of the model calls of this agent and every agent below it, in each run (README "Budgets"): checked
   * before each of their model calls, with the run's own budget.
   */
  budget?: Budget;
}

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The base of every agent. Subclass it and implement `runImpl` for a custom agent. */
export class BaseAgent {
  readonly name: string;
  readonly description: string;
  readonly subAgents: readonly BaseAgent[];
  /** This agent's step deadline (ms), when it overrides the engine's. */
  readonly maxStepMs: number | undefined;
  /** The budget of this agent's subtree, if any (not part of the definition hash: it may change between runs). */
  readonly budget: Budget | undefined;
  private parent: BaseAgent | undefined;

  constructor(options: BaseAgentOptions) {
    if (typeof options?.name !== 'string' || !NAME_PATTERN.test(options.name)) {
      throw new AgentloomError(
        'VALIDATION',
        `agent name "${String(options?.name)}" is not valid: use a JS identifier such as "research_agent"`,
        { details: { field: 'name' } },
      );
    }
    if (options.name === 'user') {
      throw new AgentloomError(
        'VALIDATION',
        'agent name "user" is reserved for the end user; choose another name',
        {
          details: { field: 'name' },
        },
      );
    }
    this.name = options.name;
    this.description = options.description ?? '';
    if (
      options.maxStepMs !== undefined &&
      (typeof options.maxStepMs !== 'number' || !Number.isFinite(options.maxStepMs) || options.maxStepMs <= 0)
    ) {
      throw new AgentloomError(
        'VALIDATION',
        `agent "${options.name}": maxStepMs must be a positive number of milliseconds, e.g. 600000 for 10 minutes`,
        { details: { field: 'maxStepMs' } },
      );
    }
    this.maxStepMs = options.maxStepMs;
    this.budget =
      options.budget === undefined
        ? undefined
        : validateBudget(options.budget, `agent "${options.name}": budget`);
    this.subAgents = [...(options.subAgents ?? [])];
    for (const child of this.subAgents) {
      if (!(child instanceof BaseAgent)) {
        throw new AgentloomError('VALIDATION', `agent "${this.name}": subAgents must be agents`, {
          details: { field: 'subAgents' },
        });
      }
      if (child.parent) {
        throw new AgentloomError(
          'VALIDATION',
          `agent "${child.name}" already has parent "${child.parent.name}"; an agent can be a sub-agent of only one agent (create a new instance for "${this.name}")`,
          { details: { field: 'subAgents', agent: child.name } },
        );
      }
      child.parent = this;
    }
    const seen = new Set<string>();
    for (const agent of this.descendants()) {
      if (seen.has(agent.name)) {
        throw new AgentloomError(
          'VALIDATION',
          `agent name "${agent.name}" is used twice in the tree of "${this.name}"; names must be unique`,
          {
            details: { field: 'name', agent: agent.name },
          },
        );
      }
      seen.add(agent.name);
    }
  }

  /** The node kind of this agent. Custom agents are 'custom'. */
  get kind(): AgentKind {
    return 'custom';
  }

  /** The agent this one is a sub-agent of. */
  get parentAgent(): BaseAgent | undefined {
    return this.parent;
  }

  /** The top of this agent's tree. */
  get rootAgent(): BaseAgent {
    return this.parent ? this.parent.rootAgent : this;
  }

  /** This agent and every agent below it, depth first. */
  *descendants(): Generator<BaseAgent> {
    yield this;
    for (const child of this.subAgents) yield* child.descendants();
  }

  /** The agent with this name in this agent's subtree. */
  findAgent(name: string): BaseAgent | undefined {
    for (const agent of this.descendants()) if (agent.name === name) return agent;
    return undefined;
  }

  /**
   * The value a final answer of this agent stands for when another agent uses it (an AgentTool's result): the
   * text itself. LlmAgent with `outputSchema` returns the parsed and validated JSON.
   */
  outputValue(text: string): unknown {
    return text;
  }

  /** The structural description hashed into an invocation's definition hash (see engine). */
  definition(): Record<string, unknown> {
    return { name: this.name, kind: this.kind, subAgents: this.subAgents.map((a) => a.definition()) };
  }

  /**
   * A custom agent's behaviour: yield events (built with `createEvent`). An event that changes state is stored
   * before the generator continues. Any other is stored before the step's next event, model or tool call, child
   * or history read, within 10 ms if none of these comes, and at the latest in the commit that completes the step
   * (so a step whose last event ends it costs one commit, not two). If the node is re-run after a crash, the
   * events it already stored are skipped, so a deterministic generator never duplicates history.
   */
  // eslint-disable-next-line require-yield -- the base class only explains that subclasses must override it
  protected async *runImpl(_ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    throw new AgentloomError(
      'VALIDATION',
      `agent "${this.name}" is a BaseAgent without runImpl; override runImpl`,
    );
  }

  /**
   * Stops work this agent started outside the engine (a remote agent's task) when its run is cancelled while the
   * node is unfinished: called with the node's stored events before the cancel commits, so a crash in between
   * leaves the run uncancelled (the cancel is asked again), never the outside work running on. Default: nothing.
   */
  async stopOutside(_journal: readonly Event[]): Promise<void> {}

  /** Runs this agent as a leaf node. The engine calls this; users do not. */
  async runLeaf(runtime: NodeRuntime): Promise<LeafOutcome> {
    const alreadyStored = runtime.journal.filter((e) => e.author === this.name).length;
    let index = 0;
    let escalated = false;
    let output: string | undefined;
    const ctx = invocationContextOf(this, runtime);
    for await (const event of this.runImpl(ctx)) {
      const current = index++;
      if (event.actions.escalate) escalated = true;
      const text = event.content?.parts.map((p) => p.text ?? '').join('');
      if (text) output = text;
      // Replay after a crash: the first `alreadyStored` events were stored by an earlier attempt.
      if (current < alreadyStored) continue;
      await runtime.emitDeferred({ ...event, author: event.author || this.name, id: undefined });
    }
    return { status: 'completed', escalated, output };
  }
}

/** The context a custom agent's runImpl receives. */
export function invocationContextOf(agent: BaseAgent, runtime: NodeRuntime): InvocationContext {
  return {
    invocationId: runtime.invocationId,
    agent,
    branch: runtime.branch,
    nodePath: runtime.nodePath,
    session: {
      id: runtime.sessionId,
      userId: runtime.userId,
      app: runtime.app,
      get state() {
        return runtime.state();
      },
    },
    signal: runtime.signal,
    endInvocation: () => runtime.endInvocation(),
  };
}

export { createEvent };
