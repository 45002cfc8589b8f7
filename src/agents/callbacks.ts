/** Callback signatures of LlmAgent (SEMANTICS §3). Returning a value short-circuits the step it wraps. */
import type { Content } from '../core/content.js';
import type { ModelRequest, ModelResponse } from '../models/model.js';
import type { StateAccessor, Tool, ToolContext } from '../tools/tool.js';

/** What an agent or model callback receives. State writes land in the next stored event's `stateDelta`. */
export interface CallbackContext {
  readonly agentName: string;
  readonly invocationId: string;
  readonly state: StateAccessor;
  endInvocation(): void;
}

type Maybe<T> = T | undefined | void | Promise<T | undefined | void>;

/** The callbacks an LlmAgent accepts. */
export interface LlmAgentCallbacks {
  /** Return content to answer with it and skip the agent. */
  beforeAgentCallback?: (ctx: CallbackContext) => Maybe<Content>;
  /** Return content to append it as the agent's last word. */
  afterAgentCallback?: (ctx: CallbackContext) => Maybe<Content>;
  /** Return a response to use it instead of calling the model. The request may be edited in place. */
  beforeModelCallback?: (ctx: CallbackContext, request: ModelRequest) => Maybe<ModelResponse>;
  /** Return a response to replace the model's. */
  afterModelCallback?: (ctx: CallbackContext, response: ModelResponse) => Maybe<ModelResponse>;
  /** Return a response to recover from a model error (after its retries). */
  onModelErrorCallback?: (
    ctx: CallbackContext,
    request: ModelRequest,
    error: unknown,
  ) => Maybe<ModelResponse>;
  /** Return a result to skip the tool. */
  beforeToolCallback?: (
    tool: Tool,
    args: Record<string, unknown>,
    ctx: ToolContext,
  ) => Maybe<Record<string, unknown>>;
  /** Return a result to replace the tool's. */
  afterToolCallback?: (
    tool: Tool,
    args: Record<string, unknown>,
    ctx: ToolContext,
    result: Record<string, unknown>,
  ) => Maybe<Record<string, unknown>>;
  /** Return a result to recover from a tool error (otherwise the model sees `{error: message}`). */
  onToolErrorCallback?: (
    tool: Tool,
    args: Record<string, unknown>,
    ctx: ToolContext,
    error: unknown,
  ) => Maybe<Record<string, unknown>>;
}
