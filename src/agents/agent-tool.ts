/**
 * AgentTool: an agent offered to a model as a tool. In agents/ because it wraps an agent (tools/ never imports
 * agents/); calls the Tool port (tools/tool.ts), models/ types and core/.
 */
import * as z from 'zod';
import { AgentloomError } from '../core/errors.js';
import type { BaseAgent } from './base-agent.js';
import type { ToolDeclaration } from '../models/model.js';
import { toResponseObject, type Tool, type ToolContext } from '../tools/tool.js';

/** Options of {@link AgentTool}. */
export interface AgentToolOptions {
  agent: BaseAgent;
  /** End the calling agent's turn with the child's answer instead of asking the model to summarise it. */
  skipSummarization?: boolean;
}

const requestSchema = z.object({ request: z.string() });

/**
 * Offers an agent to a model as a tool. The agent runs as a child node of the call in the same invocation and
 * session (branch `<branch>.<agent>@<callId>`): its state changes are shared, its model calls count in the same
 * budget, and its confirmation requests surface to the user. Its last final text is the tool result
 * (`{result}`); an LlmAgent with `outputSchema` returns the validated object itself, as ADK does.
 */
export class AgentTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly isLongRunning = false;
  readonly sideEffects = 'idempotent' as const;
  readonly agent: BaseAgent;
  private readonly skipSummarization: boolean;

  constructor(options: AgentToolOptions) {
    if (!options?.agent) {
      throw new AgentloomError('VALIDATION', 'AgentTool needs { agent }', { details: { field: 'agent' } });
    }
    this.agent = options.agent;
    this.name = options.agent.name;
    this.description =
      options.agent.description || `Delegates a request to the agent "${options.agent.name}".`;
    this.skipSummarization = options.skipSummarization ?? false;
  }

  declaration(): ToolDeclaration {
    return {
      name: this.name,
      description: this.description,
      parameters: { type: 'object', properties: { request: { type: 'string' } }, required: ['request'] },
    };
  }

  requiresConfirmation(): boolean {
    return false;
  }

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    const parsed = requestSchema.safeParse(args);
    if (!parsed.success) {
      throw new AgentloomError('VALIDATION', `tool "${this.name}" takes {"request": "<text>"}`, {
        details: { tool: this.name },
      });
    }
    const outcome = await ctx.runAgent(this.agent.name);
    if (outcome.status === 'failed') {
      throw new AgentloomError(
        'TOOL_ERROR',
        `agent "${this.agent.name}" failed: ${outcome.error?.message ?? 'unknown error'}`,
      );
    }
    if (this.skipSummarization) ctx.actions.skipSummarization = true;
    // An answer that does not match the agent's outputSchema throws OUTPUT_SCHEMA: the model sees it as {error}.
    return toResponseObject(this.agent.outputValue(outcome.output ?? ''));
  }
}
