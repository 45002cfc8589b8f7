/**
 * A toolset: a source of tools an LlmAgent lists in `tools` beside single tools, whose tools are known only by
 * asking it (an MCP server's `tools/list`). The agent's loop asks once per activation; a toolset caches what it
 * was told and holds its connections until `close` (the engine closes its apps' toolsets when it closes).
 */
import type { Logger } from 'pino';
import type { Tool } from './tool.js';
import type { ToolAuth } from './auth.js';

/** What a toolset is given when asked for its tools. */
export interface ToolsetContext {
  /** Where the toolset logs (its server's stderr, a lost connection). */
  logger?: Logger;
  /** Aborted when the step is (cancel, shutdown). */
  signal?: AbortSignal;
}

/** A source of tools (see the file's comment). */
export interface Toolset {
  readonly isToolset: true;
  /** Names it in errors, logs and the agent's definition. */
  readonly name: string;
  /** The tools offered now, sorted by name. */
  tools(ctx: ToolsetContext): Promise<Tool[]>;
  /** The user credential its tools need (see FunctionTool's `auth`). */
  readonly auth?: ToolAuth;
  /** Its configuration (no secrets): what the app's definition hash covers, not the tools listed. */
  definition(): Record<string, unknown>;
  /** Closes its connections and child processes; it reconnects if asked for tools again. */
  close(): Promise<void>;
}

/** Whether a `tools` entry is a toolset. */
export function isToolset(value: unknown): value is Toolset {
  return typeof value === 'object' && value !== null && (value as { isToolset?: unknown }).isToolset === true;
}
