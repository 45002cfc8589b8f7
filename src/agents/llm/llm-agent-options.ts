/**
 * An LlmAgent's options, and what of an LlmAgent its loop (llm-flow.ts) and tool calls (tool-call.ts,
 * tool-context.ts) see: types only, below llm-agent.ts so that the loop does not import the class that runs it.
 */
import type * as z from 'zod';
import type { Model } from '../../models/model.js';
import type { Tool } from '../../tools/tool.js';
import type { Toolset } from '../../tools/toolset.js';
import type { BaseAgent, BaseAgentOptions } from '../base-agent.js';
import type { CallbackChains, LlmAgentCallbacks } from './callbacks.js';
import type { InvocationContext } from '../context.js';

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
  /** Tools, toolsets (an MCP server's tools: McpToolset), or names of tools registered with the engine. */
  tools?: (Tool | Toolset | string)[];
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

/** What the LlmAgent loop sees of its agent (implemented by LlmAgent). */
export interface LlmFlowAgent extends BaseAgent {
  readonly options: Readonly<LlmAgentOptions>;
  /** Model↔tool rounds per activation. */
  readonly maxIterations: number;
  /** Every callback option as a list, run in order until one returns a value. */
  readonly callbacks: CallbackChains;
  /** The agents this one may transfer the conversation to. */
  transferTargets(): BaseAgent[];
}
