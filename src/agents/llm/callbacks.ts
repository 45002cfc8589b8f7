/**
 * Callbacks of LlmAgent (SEMANTICS §3). Returning a value short-circuits the step it wraps. Every option takes one
 * callback or a list of them: the list runs in order and the first callback that returns a value wins (ADK's
 * chain); the rest are not called. They run after the engine's plugins, through plugins/pipeline.ts.
 */
import type { Content } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';
import type { ModelRequest, ModelResponse } from '../../models/model.js';
import type { Tool, ToolContext } from '../../tools/tool.js';
import type { CallbackContext } from '../../plugins/base-plugin.js';

export type { CallbackContext };

type Maybe<T> = T | undefined | void | Promise<T | undefined | void>;

/** Return content to answer with it and skip the agent. */
export type BeforeAgentCallback = (ctx: CallbackContext) => Maybe<Content>;
/** Return content to append it as the agent's last word. */
export type AfterAgentCallback = (ctx: CallbackContext) => Maybe<Content>;
/** Return a response to use it instead of calling the model. The request may be edited in place. */
export type BeforeModelCallback = (ctx: CallbackContext, request: ModelRequest) => Maybe<ModelResponse>;
/** Return a response to replace the model's. */
export type AfterModelCallback = (ctx: CallbackContext, response: ModelResponse) => Maybe<ModelResponse>;
/** Return a response to recover from a model error (after its retries). */
export type OnModelErrorCallback = (
  ctx: CallbackContext,
  request: ModelRequest,
  error: unknown,
) => Maybe<ModelResponse>;
/** Return a result to skip the tool. */
export type BeforeToolCallback = (
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
) => Maybe<Record<string, unknown>>;
/** Return a result to replace the tool's. */
export type AfterToolCallback = (
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
  result: Record<string, unknown>,
) => Maybe<Record<string, unknown>>;
/** Return a result to recover from a tool error (otherwise the model sees `{error: message}`). */
export type OnToolErrorCallback = (
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ToolContext,
  error: unknown,
) => Maybe<Record<string, unknown>>;

/** One callback, or a list run in order until one returns a value. */
export type CallbackList<F> = F | readonly F[];

/** The callbacks an LlmAgent accepts. */
export interface LlmAgentCallbacks {
  beforeAgentCallback?: CallbackList<BeforeAgentCallback>;
  afterAgentCallback?: CallbackList<AfterAgentCallback>;
  beforeModelCallback?: CallbackList<BeforeModelCallback>;
  afterModelCallback?: CallbackList<AfterModelCallback>;
  onModelErrorCallback?: CallbackList<OnModelErrorCallback>;
  beforeToolCallback?: CallbackList<BeforeToolCallback>;
  afterToolCallback?: CallbackList<AfterToolCallback>;
  onToolErrorCallback?: CallbackList<OnToolErrorCallback>;
}

/** Every callback option as a list (empty when not given). */
export type CallbackChains = {
  readonly [K in keyof LlmAgentCallbacks]-?: readonly Extract<
    NonNullable<LlmAgentCallbacks[K]>,
    (...args: never[]) => unknown
  >[];
};

const CALLBACK_OPTIONS = [
  'beforeAgentCallback',
  'afterAgentCallback',
  'beforeModelCallback',
  'afterModelCallback',
  'onModelErrorCallback',
  'beforeToolCallback',
  'afterToolCallback',
  'onToolErrorCallback',
] as const satisfies readonly (keyof LlmAgentCallbacks)[];

function describeValue(value: unknown): string {
  if (Array.isArray(value)) return 'an array with an element that is not a function';
  return value === null ? 'null' : typeof value;
}

function chainOf(agentName: string, option: keyof LlmAgentCallbacks, value: unknown): readonly unknown[] {
  if (value === undefined) return [];
  if (typeof value === 'function') return [value];
  if (Array.isArray(value) && value.every((f) => typeof f === 'function')) return [...(value as unknown[])];
  throw new AgentloomError(
    'VALIDATION',
    `LlmAgent "${agentName}": ${option} must be a function or an array of functions, got ${describeValue(value)}`,
    { details: { field: option } },
  );
}

/**
 * The callback options of an agent as lists, checked once at construction.
 *
 * @throws AgentloomError `VALIDATION` naming the first option that is neither a function nor an array of functions.
 */
export function callbackChains(agentName: string, options: LlmAgentCallbacks): CallbackChains {
  const chains = Object.fromEntries(
    CALLBACK_OPTIONS.map((option) => [option, Object.freeze(chainOf(agentName, option, options[option]))]),
  );
  return Object.freeze(chains) as unknown as CallbackChains;
}
