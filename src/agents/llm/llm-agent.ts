/**
 * LlmAgent: a model with instructions and tools (SEMANTICS §3). Its activation is a journaled model↔tool loop
 * (see llm-flow.ts) that resumes step by step from its stored events.
 */
import { isTimeoutMs } from '../../core/deadline.js';
import { AgentloomError } from '../../core/errors.js';
import { zodIssues } from '../../core/validation.js';
import { isToolset, type Toolset } from '../../tools/toolset.js';
import type { Tool } from '../../tools/tool.js';
import { AgentTool } from '../agent-tool.js';
import { BaseAgent, type AgentKind } from '../base-agent.js';
import { callbackChains, type CallbackChains } from './callbacks.js';
import type { LeafOutcome, NodeRuntime } from '../context.js';
import type { LlmAgentOptions, LlmFlowAgent } from './llm-agent-options.js';
import { runLlmFlow } from './llm-flow.js';

/** An agent driven by a language model. */
export class LlmAgent extends BaseAgent implements LlmFlowAgent {
  readonly options: Readonly<LlmAgentOptions>;
  readonly maxIterations: number;
  /** Every callback option as a list, run in order until one returns a value. */
  readonly callbacks: CallbackChains;

  constructor(options: LlmAgentOptions) {
    super(options);
    const maxIterations = options.maxIterations ?? 16;
    if (!Number.isInteger(maxIterations) || maxIterations < 1) {
      throw new AgentloomError(
        'VALIDATION',
        `LlmAgent "${this.name}": maxIterations must be an integer ≥ 1`,
        {
          details: { field: 'maxIterations' },
        },
      );
    }
    if (!isTimeoutMs(options.modelTimeoutMs)) {
      throw new AgentloomError(
        'VALIDATION',
        `LlmAgent "${this.name}": modelTimeoutMs must be a positive number of milliseconds, e.g. 120000`,
        { details: { field: 'modelTimeoutMs' } },
      );
    }
    if (options.includeContents !== undefined && !['default', 'none'].includes(options.includeContents)) {
      throw new AgentloomError(
        'VALIDATION',
        `LlmAgent "${this.name}": includeContents must be 'default' or 'none'`,
        {
          details: { field: 'includeContents' },
        },
      );
    }
    const names = new Set<string>();
    for (const tool of options.tools ?? []) {
      const name = typeof tool === 'string' ? tool : isToolset(tool) ? `toolset:${tool.name}` : tool.name;
      if (names.has(name)) {
        const message = isToolset(tool)
          ? `two toolsets are named "${tool.name}": give each its own name (or prefix)`
          : `tool "${name}" is listed twice`;
        throw new AgentloomError('VALIDATION', `LlmAgent "${this.name}": ${message}`, {
          details: { field: 'tools' },
        });
      }
      names.add(name);
    }
    this.callbacks = callbackChains(this.name, options);
    this.maxIterations = maxIterations;
    this.options = { ...options };
  }

  override get kind(): AgentKind {
    return 'llm';
  }

  /** Agents this agent can run as AgentTool children. */
  get toolAgents(): BaseAgent[] {
    return (this.options.tools ?? []).flatMap((t) => (t instanceof AgentTool ? [t.agent] : []));
  }

  /** Whether `transfer_to_agent` is offered, and to whom. */
  transferTargets(): BaseAgent[] {
    if (this.options.disableTransfer) return [];
    const targets: BaseAgent[] = [...this.subAgents];
    const parent = this.parentAgent;
    if (parent instanceof LlmAgent) {
      if (!this.options.disallowTransferToParent) targets.push(parent);
      if (!this.options.disallowTransferToPeers) targets.push(...parent.subAgents.filter((a) => a !== this));
    }
    return targets;
  }

  override definition(): Record<string, unknown> {
    return {
      ...super.definition(),
      tools: (this.options.tools ?? []).map((t) =>
        typeof t === 'string' ? t : isToolset(t) ? `toolset:${t.name}` : t.name,
      ),
      ...this.toolsetDefinitions(),
      toolAgents: this.toolAgents.map((a) => a.definition()),
      outputKey: this.options.outputKey ?? null,
      maxIterations: this.maxIterations,
    };
  }

  /**
   * A toolset's configuration (not what its server lists) is part of the definition; the key is left out without
   * toolsets, so that the hash of an agent without any is what it always was.
   */
  private toolsetDefinitions(): { toolsets?: Record<string, unknown>[] } {
    const toolsets = (this.options.tools ?? []).flatMap((t) => (isToolset(t) ? [t.definition()] : []));
    return toolsets.length > 0 ? { toolsets } : {};
  }

  /** The tools it holds as instances (not names, not toolsets). */
  get toolInstances(): Tool[] {
    return (this.options.tools ?? []).filter((t): t is Tool => typeof t !== 'string' && !isToolset(t));
  }

  /** The toolsets among its tools (the engine closes them when it closes). */
  get toolsets(): Toolset[] {
    return (this.options.tools ?? []).filter(isToolset);
  }

  /**
   * The value a final answer stands for: its text, or with `outputSchema` the parsed and validated JSON (what
   * `outputKey` stores and what an AgentTool of this agent returns).
   *
   * @throws AgentloomError `OUTPUT_SCHEMA` when the text is not JSON matching `outputSchema`.
   */
  override outputValue(text: string): unknown {
    const schema = this.options.outputSchema;
    if (!schema) return text;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new AgentloomError(
        'OUTPUT_SCHEMA',
        `${this.name}: the model's answer is not JSON as outputSchema requires: ${text.slice(0, 200)}`,
        { cause: err },
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new AgentloomError(
        'OUTPUT_SCHEMA',
        `${this.name}: the model's answer does not match outputSchema: ${zodIssues(parsed.error)}`,
        { details: { issues: parsed.error.issues } },
      );
    }
    return parsed.data;
  }

  override runLeaf(runtime: NodeRuntime): Promise<LeafOutcome> {
    return runLlmFlow(this, runtime);
  }
}

/**
 * Whether a conversation handed to `agent` can find its way back up its tree (ADK's
 * `_is_transferable_across_agent_tree`): it and every agent above it are LlmAgents that may transfer to their
 * parent. Only such an agent keeps the conversation when the next message arrives (see `engine.enqueue`).
 */
export function isTransferableAcrossTree(agent: BaseAgent): boolean {
  for (let current: BaseAgent | undefined = agent; current; current = current.parentAgent) {
    if (!(current instanceof LlmAgent)) return false;
    if (current.options.disallowTransferToParent || current.options.disableTransfer) return false;
  }
  return true;
}
