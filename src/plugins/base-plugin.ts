/**
 * ADK's BasePlugin (adk-js `plugins/base_plugin.ts`), with its callback names and meaning: a plugin is registered
 * once on the engine (`createEngine({ plugins })`, an apps module's `plugins` export) and applies to every agent,
 * model call, tool call and event of every app the engine serves. Each callback may return a value to short-circuit
 * (the value is used instead of what it wraps, and no later plugin nor the agent's own callback is asked) or
 * undefined to let the chain go on; a request, a response or tool arguments changed in place pass down the chain.
 */
import type { Content } from '../core/content.js';
import type { Event } from '../core/event.js';
import type { ModelRequest, ModelResponse } from '../models/model.js';
import type { StateAccessor, Tool, ToolContext } from '../tools/tool.js';

/** What an agent or model callback receives. State writes land in the next stored event's `stateDelta`. */
export interface CallbackContext {
  readonly agentName: string;
  readonly invocationId: string;
  readonly state: StateAccessor;
  endInvocation(): void;
}

/** The run a run-level callback is about (ADK's InvocationContext, as far as a run is concerned). */
export interface PluginInvocationContext {
  readonly invocationId: string;
  readonly appName: string;
  readonly userId: string;
  readonly sessionId: string;
  /** The root agent's name. */
  readonly rootAgent: string;
}

/** How a run ended, for afterRunCallback. */
export interface RunOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  output?: string | null;
  error?: { code?: string; message?: string } | null;
}

/** The agent an agent callback is about (a BaseAgent). */
export interface PluginAgent {
  readonly name: string;
  readonly description?: string;
}

/** What every tool callback receives: the tool, its arguments (editable in place before it runs) and its context. */
export interface ToolCallbackParams {
  tool: Tool;
  toolArgs: Record<string, unknown>;
  toolContext: ToolContext;
}

type Maybe<T> = Promise<T | undefined | void> | T | undefined | void;

/** The twelve callbacks of ADK TypeScript's BasePlugin, in the order a run meets them. */
export const PLUGIN_CALLBACKS = [
  'onUserMessageCallback',
  'beforeRunCallback',
  'beforeAgentCallback',
  'beforeModelCallback',
  'afterModelCallback',
  'onModelErrorCallback',
  'beforeToolCallback',
  'afterToolCallback',
  'onToolErrorCallback',
  'afterAgentCallback',
  'onEventCallback',
  'afterRunCallback',
] as const;

/** One of the twelve callback names. */
export type PluginCallbackName = (typeof PLUGIN_CALLBACKS)[number];

/**
 * Base class of plugins. Override the callbacks you need; the others return undefined. Plugins run in several
 * worker processes at once and a run may move between them: keep no state in the plugin object that another
 * callback of the same run relies on — store it in session state (`callbackContext.state`, `toolContext.state`).
 */
export abstract class BasePlugin {
  /** Unique among the plugins of an engine. */
  readonly name: string;

  constructor(name: string) {
    this.name = name;
  }

  /** The user's message, before it is stored: return content to store instead (enqueueing process). */
  onUserMessageCallback(_p: {
    invocationContext: PluginInvocationContext;
    userMessage: Content;
  }): Maybe<Content> {
    return undefined;
  }

  /** Once per run, at its first step: return content to end the run at once with it as the answer. */
  beforeRunCallback(_p: { invocationContext: PluginInvocationContext }): Maybe<Content> {
    return undefined;
  }

  /** Once per stored event, after its commit (the return value is ignored: the event is already stored). */
  onEventCallback(_p: { invocationContext: PluginInvocationContext; event: Event }): Maybe<Event> {
    return undefined;
  }

  /** At most once per run end, after the commit that ended it, on whichever worker ended it. */
  afterRunCallback(_p: {
    invocationContext: PluginInvocationContext;
    outcome: RunOutcome;
  }): Promise<void> | void {
    return undefined;
  }

  /** Before an LlmAgent's activation: return content to answer with it and skip the agent. */
  beforeAgentCallback(_p: { agent: PluginAgent; callbackContext: CallbackContext }): Maybe<Content> {
    return undefined;
  }

  /** After an LlmAgent's activation: return content to append it as the agent's last word. */
  afterAgentCallback(_p: { agent: PluginAgent; callbackContext: CallbackContext }): Maybe<Content> {
    return undefined;
  }

  /** Before a model call (the request may be edited in place): return a response to use instead of the model's. */
  beforeModelCallback(_p: {
    callbackContext: CallbackContext;
    llmRequest: ModelRequest;
  }): Maybe<ModelResponse> {
    return undefined;
  }

  /** After a model call: return a response to replace the model's. */
  afterModelCallback(_p: {
    callbackContext: CallbackContext;
    llmResponse: ModelResponse;
  }): Maybe<ModelResponse> {
    return undefined;
  }

  /** A model call failed (after its retries): return a response to recover. */
  onModelErrorCallback(_p: {
    callbackContext: CallbackContext;
    llmRequest: ModelRequest;
    error: Error;
  }): Maybe<ModelResponse> {
    return undefined;
  }

  /** Before a tool runs (`toolArgs` may be edited in place): return a result to skip the tool. */
  beforeToolCallback(_p: ToolCallbackParams): Maybe<Record<string, unknown>> {
    return undefined;
  }

  /** After a tool ran: return a result to replace the tool's. */
  afterToolCallback(
    _p: ToolCallbackParams & { result: Record<string, unknown> },
  ): Maybe<Record<string, unknown>> {
    return undefined;
  }

  /** A tool threw: return a result to answer the model with (otherwise it sees `{error: message}`). */
  onToolErrorCallback(_p: ToolCallbackParams & { error: Error }): Maybe<Record<string, unknown>> {
    return undefined;
  }
}
