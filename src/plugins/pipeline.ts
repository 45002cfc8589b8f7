/**
 * The one seam around an agent's activation, a model call and a tool call: the engine's plugins first, in
 * registration order, then the agent's own callbacks (ADK's order). The first value returned ends the chain — the
 * agent's own callbacks are not asked then — and a request or arguments changed in place pass down it. The agent
 * loop (agents/llm/) calls these and nothing else; what a short-circuit answer means durably (it is stored as the
 * model's or the tool's would be) is the loop's business, so every stage here gets it for free.
 */
import type { Content } from '../core/content.js';
import type { ModelRequest, ModelResponse } from '../models/model.js';
import type { Tool, ToolContext } from '../tools/tool.js';
import type { CallbackContext, PluginAgent } from './base-plugin.js';
import type { PluginManager } from './plugin-manager.js';

type Maybe<T> = T | undefined | void | Promise<T | undefined | void>;

/** Runs a chain of callbacks in order; resolves with the first value one returns (not undefined or null). */
export async function runChain<A extends unknown[], R>(
  chain: readonly ((...args: A) => Maybe<R>)[],
  ...args: A
): Promise<R | undefined> {
  for (const callback of chain) {
    const value = await callback(...args);
    if (value !== undefined && value !== null) return value as R;
  }
  return undefined;
}

type Chain<A extends unknown[], R> = readonly ((...args: A) => Maybe<R>)[];
type ToolArgs = Record<string, unknown>;
type ToolResult = Record<string, unknown>;

/** An activation's stages: the engine's plugins (absent: none) and the agent's callbacks by ADK name. */
export interface Stages {
  readonly plugins: PluginManager | undefined;
  readonly agent: PluginAgent;
}

/** beforeAgentCallback: plugins, then the agent's. */
export async function beforeAgent(
  s: Stages,
  own: Chain<[CallbackContext], Content>,
  cbx: CallbackContext,
): Promise<Content | undefined> {
  const answer = await s.plugins?.run('beforeAgentCallback', { agent: s.agent, callbackContext: cbx });
  return answer ?? runChain(own, cbx);
}

/** afterAgentCallback: plugins, then the agent's. */
export async function afterAgent(
  s: Stages,
  own: Chain<[CallbackContext], Content>,
  cbx: CallbackContext,
): Promise<Content | undefined> {
  const answer = await s.plugins?.run('afterAgentCallback', { agent: s.agent, callbackContext: cbx });
  return answer ?? runChain(own, cbx);
}

/** Whether an agent stage has anything to run (the loop skips its bookkeeping otherwise). */
export function hasAgentStage(
  s: Stages,
  own: readonly unknown[],
  callback: 'beforeAgentCallback' | 'afterAgentCallback',
): boolean {
  return own.length > 0 || (s.plugins?.has(callback) ?? false);
}

/** beforeModelCallback: plugins, then the agent's; `request` may be edited in place by any of them. */
export async function beforeModel(
  s: Stages,
  own: Chain<[CallbackContext, ModelRequest], ModelResponse>,
  cbx: CallbackContext,
  request: ModelRequest,
): Promise<ModelResponse | undefined> {
  const answer = await s.plugins?.run('beforeModelCallback', { callbackContext: cbx, llmRequest: request });
  return answer ?? runChain(own, cbx, request);
}

/** afterModelCallback: plugins, then the agent's; the response each one sees is the model's (or a before answer). */
export async function afterModel(
  s: Stages,
  own: Chain<[CallbackContext, ModelResponse], ModelResponse>,
  cbx: CallbackContext,
  response: ModelResponse,
): Promise<ModelResponse | undefined> {
  const answer = await s.plugins?.run('afterModelCallback', { callbackContext: cbx, llmResponse: response });
  return answer ?? runChain(own, cbx, response);
}

/** onModelErrorCallback: plugins, then the agent's. */
export async function onModelError(
  s: Stages,
  own: Chain<[CallbackContext, ModelRequest, unknown], ModelResponse>,
  cbx: CallbackContext,
  request: ModelRequest,
  error: unknown,
): Promise<ModelResponse | undefined> {
  const answer = await s.plugins?.run('onModelErrorCallback', {
    callbackContext: cbx,
    llmRequest: request,
    error: asError(error),
  });
  return answer ?? runChain(own, cbx, request, error);
}

/** The arguments of a tool stage. */
export interface ToolCall {
  tool: Tool;
  args: ToolArgs;
  ctx: ToolContext;
}

/** beforeToolCallback: plugins, then the agent's; `args` may be edited in place. */
export async function beforeTool(
  s: Stages,
  own: Chain<[Tool, ToolArgs, ToolContext], ToolResult>,
  c: ToolCall,
): Promise<ToolResult | undefined> {
  const answer = await s.plugins?.run('beforeToolCallback', {
    tool: c.tool,
    toolArgs: c.args,
    toolContext: c.ctx,
  });
  return answer ?? runChain(own, c.tool, c.args, c.ctx);
}

/** afterToolCallback: plugins, then the agent's. */
export async function afterTool(
  s: Stages,
  own: Chain<[Tool, ToolArgs, ToolContext, ToolResult], ToolResult>,
  c: ToolCall,
  result: ToolResult,
): Promise<ToolResult | undefined> {
  const answer = await s.plugins?.run('afterToolCallback', {
    tool: c.tool,
    toolArgs: c.args,
    toolContext: c.ctx,
    result,
  });
  return answer ?? runChain(own, c.tool, c.args, c.ctx, result);
}

/** onToolErrorCallback: plugins, then the agent's. */
export async function onToolError(
  s: Stages,
  own: Chain<[Tool, ToolArgs, ToolContext, unknown], ToolResult>,
  c: ToolCall,
  error: unknown,
): Promise<ToolResult | undefined> {
  const answer = await s.plugins?.run('onToolErrorCallback', {
    tool: c.tool,
    toolArgs: c.args,
    toolContext: c.ctx,
    error: asError(error),
  });
  return answer ?? runChain(own, c.tool, c.args, c.ctx, error);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
