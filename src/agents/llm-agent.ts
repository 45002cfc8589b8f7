/**
 * LlmAgent: a model with instructions and tools (SEMANTICS §3). Its activation is a journaled model↔tool loop
 * (see llm-flow.ts) that resumes step by step from its stored events.
 */
import type { z } from 'zod';
import { isTimeoutMs } from '../core/deadline.js';
import { AgentloomError } from '../core/errors.js';
import { zodIssues } from '../core/validation.js';
import type { Model } from '../models/model.js';
import type { Tool } from '../tools/tool.js';
import { AgentTool } from '../tools/agent-tool.js';
import { BaseAgent, type AgentKind, type BaseAgentOptions } from './base-agent.js';
import { callbackChains, type CallbackChains, type LlmAgentCallbacks } from './callbacks.js';
import type { InvocationContext, LeafOutcome, NodeRuntime } from './context.js';
import { runLlmFlow } from './llm-flow.js';

/** An instruction: a template (`{key}` placeholders) or a function of the invocation context. */
export type Instruction = string | ((ctx: InvocationContext) => string | Promise<string>);

/** Options of {@link LlmAgent}. */
export interface LlmAgentOptions extends BaseAgentOptions, LlmAgentCallbacks {
  /** A Model instance or the name of a registered model (or a Gemini model id). */
  model?: Model | string;
  instruction?: Instruction;
  /** Applies to every agent in the tree (taken from the root agent). */
  globalInstruction?: Instruction;
  /** Sent as is (no templating), before the instruction. */
  staticInstruction?: string;
  /** Tools, or names of tools registered with the engine. */
  tools?: (Tool | string)[];
  /** Stores the final response text (or the parsed `outputSchema` value) in state under this key. */
  outputKey?: string;
  /** A zod schema the final response must match (JSON); tools are not offered then. */
  outputSchema?: z.ZodType;
  /** 'default': the session history of this branch; 'none': only the current turn. */
  includeContents?: 'default' | 'none';
  /** Model↔tool rounds per activation. Default 16. */
  maxIterations?: number;
  generateContentConfig?: Record<string, unknown>;
  /** Stream the model's answer: partial events reach live listeners (`engine.events(id, { partial: true })`). */
  stream?: boolean;
  /**
   * Longest one model call may take (ms); past it the call is aborted and the step fails with TIMEOUT (unless
   * `onModelErrorCallback` answers instead). Default: none (the step's `maxStepMs` bounds it).
   */
  modelTimeoutMs?: number;
  disallowTransferToParent?: boolean;
  disallowTransferToPeers?: boolean;
  disableTransfer?: boolean;
}

/** An agent driven by a language model. */
export class LlmAgent extends BaseAgent {
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
      const name = typeof tool === 'string' ? tool : tool.name;
      if (names.has(name)) {
        throw new AgentloomError('VALIDATION', `LlmAgent "${this.name}": tool "${name}" is listed twice`, {
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
      tools: (this.options.tools ?? []).map((t) => (typeof t === 'string' ? t : t.name)),
      toolAgents: this.toolAgents.map((a) => a.definition()),
      outputKey: this.options.outputKey ?? null,
      maxIterations: this.maxIterations,
    };
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
