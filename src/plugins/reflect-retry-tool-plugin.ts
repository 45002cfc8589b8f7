/**
 * ADK's ReflectAndRetryToolPlugin: a tool call that fails is answered with the error and guidance to reflect and
 * try again (ADK's response shape), up to `maxRetries` times per tool in a run; after that the error passes through
 * (the agent's own onToolErrorCallback, or the model's `{error}`). A success of the tool (a result without an
 * `error` field) resets its count.
 *
 * Durable: the count lives in the run's `temp:` state, written through the tool context, so it is stored in the same
 * commit as the call's response event. A worker that dies before that commit leaves the count as it was, and the
 * call that failed is made again; another worker that resumes the run reads the stored count. Nothing is kept in the
 * plugin object. Calls of one tool side by side in one model turn read the same count.
 */
import type { Tool } from '../tools/tool.js';
import { BasePlugin, type ToolCallbackParams } from './base-plugin.js';

/** `response_type` of a reflection answer (ADK's constant): how the plugin recognises its own answers. */
export const REFLECT_AND_RETRY_RESPONSE_TYPE = 'ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN';

/** Options of {@link ReflectAndRetryToolPlugin}. */
export interface ReflectAndRetryToolPluginOptions {
  /** Default `reflect_retry_tool_plugin`. */
  name?: string;
  /** Reflection answers per tool and run before the error passes through. Default 3; 0 lets every error through. */
  maxRetries?: number;
}

/** Answers failed tool calls with a reflection prompt, up to `maxRetries` times per tool in a run. */
export class ReflectAndRetryToolPlugin extends BasePlugin {
  readonly maxRetries: number;

  constructor(options: ReflectAndRetryToolPluginOptions = {}) {
    super(options.name ?? 'reflect_retry_tool_plugin');
    const maxRetries = options.maxRetries ?? 3;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new TypeError(
        `ReflectAndRetryToolPlugin: maxRetries must be an integer ≥ 0 (e.g. { maxRetries: 3 }), got ${String(maxRetries)}`,
      );
    }
    this.maxRetries = maxRetries;
  }

  /** The state key of `tool`'s count of reflection answers in this run. */
  private keyOf(tool: Tool): string {
    return `temp:${this.name}:${tool.name}`;
  }

  override onToolErrorCallback(
    p: ToolCallbackParams & { error: Error },
  ): Record<string, unknown> | undefined {
    const key = this.keyOf(p.tool);
    const used = Number(p.toolContext.state.get(key) ?? 0);
    if (used >= this.maxRetries) return undefined;
    const retryCount = used + 1;
    p.toolContext.state.set(key, retryCount);
    return {
      response_type: REFLECT_AND_RETRY_RESPONSE_TYPE,
      error_type: p.error.name,
      error_details: p.error.message,
      retry_count: retryCount,
      reflection_guidance: guidance(p.tool.name, p.toolArgs, p.error, retryCount, this.maxRetries),
    };
  }

  override afterToolCallback(p: ToolCallbackParams & { result: Record<string, unknown> }): undefined {
    // A success resets the tool's count. Neither the plugin's own reflection answer nor an `{error}` (the error
    // passed through once the retries were used up) is one.
    if (p.result.response_type === REFLECT_AND_RETRY_RESPONSE_TYPE || 'error' in p.result) return undefined;
    if (p.toolContext.state.get(this.keyOf(p.tool)) !== undefined)
      p.toolContext.state.delete(this.keyOf(p.tool));
    return undefined;
  }
}

function guidance(
  tool: string,
  args: Record<string, unknown>,
  error: Error,
  retryCount: number,
  maxRetries: number,
): string {
  return [
    `The call to tool \`${tool}\` failed.`,
    `Error details: ${error.message}`,
    `Tool arguments used: ${JSON.stringify(args)}`,
    `This is retry attempt ${retryCount} of ${maxRetries}. Analyze the error and the arguments you provided; do not repeat the exact same call. Check that the arguments match the tool's schema, that what the tool needs exists, whether another tool or approach fits better, and that the tool's name is one of those available. Then try a corrected or different approach.`,
  ].join('\n');
}
