/**
 * ADK's LoggingPlugin, through pino: one line per callback of every run, with the run's and the agent's ids in
 * fields and constant messages. It logs through the engine's logger (the engine hands it over when the plugin has
 * none of its own), at `info` by default; arguments and results of tools are logged at `debug` only, and prompts
 * never (STYLE.md "Logs").
 */
import type { Logger } from 'pino';
import type { Content } from '../core/content.js';
import { functionCallsOf } from '../core/content.js';
import type { Event } from '../core/event.js';
import type { ModelRequest, ModelResponse } from '../models/model.js';
import type { Tool, ToolContext } from '../tools/tool.js';
import {
  BasePlugin,
  type CallbackContext,
  type PluginAgent,
  type ToolCallbackParams,
  type PluginInvocationContext,
  type RunOutcome,
} from './base-plugin.js';

/** Options of {@link LoggingPlugin}. */
export interface LoggingPluginOptions {
  /** Default `logging_plugin`. */
  name?: string;
  /** Default: the engine's logger. */
  logger?: Logger;
  /** Level of the lines. Default `info`. */
  level?: 'trace' | 'debug' | 'info';
}

/** Logs every run, agent, model call, tool call and event. Never changes anything (returns undefined). */
export class LoggingPlugin extends BasePlugin {
  private logger: Logger | undefined;
  private readonly level: 'trace' | 'debug' | 'info';

  constructor(options: LoggingPluginOptions = {}) {
    super(options.name ?? 'logging_plugin');
    this.logger = options.logger;
    this.level = options.level ?? 'info';
  }

  /** Called by the engine: its logger, unless the plugin was given one. */
  useEngineLogger(logger: Logger): void {
    this.logger ??= logger.child({ plugin: this.name });
  }

  private log(fields: Record<string, unknown>, msg: string): void {
    this.logger?.[this.level](fields, msg);
  }

  private detail(fields: Record<string, unknown>, msg: string): void {
    this.logger?.debug(fields, msg);
  }

  override onUserMessageCallback(p: {
    invocationContext: PluginInvocationContext;
    userMessage: Content;
  }): undefined {
    this.log(
      { app: p.invocationContext.appName, userId: p.invocationContext.userId },
      'user message received',
    );
    return undefined;
  }

  override beforeRunCallback(p: { invocationContext: PluginInvocationContext }): undefined {
    this.log(
      { invocationId: p.invocationContext.invocationId, app: p.invocationContext.appName },
      'run started',
    );
    return undefined;
  }

  override afterRunCallback(p: { invocationContext: PluginInvocationContext; outcome: RunOutcome }): void {
    const { invocationId, appName } = p.invocationContext;
    const errorCode = p.outcome.error?.code;
    this.log(
      { invocationId, app: appName, status: p.outcome.status, ...(errorCode ? { errorCode } : {}) },
      'run ended',
    );
  }

  override onEventCallback(p: { invocationContext: PluginInvocationContext; event: Event }): undefined {
    const { event } = p;
    this.log(
      { invocationId: event.invocationId, seq: event.seq, author: event.author, nodePath: event.nodePath },
      'event stored',
    );
    return undefined;
  }

  override beforeAgentCallback(p: { agent: PluginAgent; callbackContext: CallbackContext }): undefined {
    this.log({ invocationId: p.callbackContext.invocationId, agent: p.agent.name }, 'agent started');
    return undefined;
  }

  override afterAgentCallback(p: { agent: PluginAgent; callbackContext: CallbackContext }): undefined {
    this.log({ invocationId: p.callbackContext.invocationId, agent: p.agent.name }, 'agent ended');
    return undefined;
  }

  override beforeModelCallback(p: { callbackContext: CallbackContext; llmRequest: ModelRequest }): undefined {
    const { llmRequest: r } = p;
    this.log(
      {
        invocationId: p.callbackContext.invocationId,
        agent: p.callbackContext.agentName,
        model: r.model,
        contents: r.contents.length,
        tools: r.tools.map((t) => t.name),
      },
      'model call',
    );
    return undefined;
  }

  override afterModelCallback(p: {
    callbackContext: CallbackContext;
    llmResponse: ModelResponse;
  }): undefined {
    const { llmResponse: r } = p;
    this.log(
      {
        invocationId: p.callbackContext.invocationId,
        agent: p.callbackContext.agentName,
        functionCalls: functionCallsOf(r.content).map((c) => c.name),
        ...(r.finishReason ? { finishReason: r.finishReason } : {}),
        ...(r.usage ? { usage: r.usage } : {}),
      },
      'model response',
    );
    return undefined;
  }

  override onModelErrorCallback(p: {
    callbackContext: CallbackContext;
    llmRequest: ModelRequest;
    error: Error;
  }): undefined {
    this.logger?.warn(
      { err: p.error, invocationId: p.callbackContext.invocationId, agent: p.callbackContext.agentName },
      'model call failed',
    );
    return undefined;
  }

  override beforeToolCallback(p: ToolCallbackParams): undefined {
    const fields = toolFields(p.tool, p.toolContext);
    this.log(fields, 'tool call');
    this.detail({ ...fields, args: p.toolArgs }, 'tool call arguments');
    return undefined;
  }

  override afterToolCallback(p: ToolCallbackParams & { result: Record<string, unknown> }): undefined {
    const fields = toolFields(p.tool, p.toolContext);
    this.log(fields, 'tool result');
    this.detail({ ...fields, result: p.result }, 'tool result value');
    return undefined;
  }

  override onToolErrorCallback(p: ToolCallbackParams & { error: Error }): undefined {
    this.logger?.warn({ err: p.error, ...toolFields(p.tool, p.toolContext) }, 'tool call failed');
    return undefined;
  }
}

function toolFields(tool: Tool, ctx: ToolContext): Record<string, unknown> {
  return {
    invocationId: ctx.invocationId,
    agent: ctx.agentName,
    tool: tool.name,
    callId: ctx.functionCallId,
  };
}
