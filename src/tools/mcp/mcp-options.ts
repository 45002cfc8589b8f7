/** The options of an McpToolset and their check (the error names the field). */
import * as z from 'zod';
import type { ToolAuth } from '../auth.js';
import type { McpConnectionOptions } from './mcp-connection.js';

/** Options of {@link McpToolset}. */
export interface McpToolsetOptions {
  /** `{ command, args?, env?, cwd? }` (stdio) or `{ url, headers?, transport? }` (Streamable HTTP, or 'sse'). */
  connection: McpConnectionOptions;
  /** Names it in logs and errors. Default: the prefix, else the server's command or host. */
  name?: string;
  /** The server's tool names to offer (default all). */
  toolFilter?: string[];
  /** Offered as `<prefix>_<name>`. */
  prefix?: string;
  /** `true` (every tool) or tool names (the server's): a human confirms each call first. */
  requireConfirmation?: boolean | string[];
  /** Tool names (the server's) safe to send again after a crash; every other tool is unsafe. */
  idempotent?: string[];
  /**
   * Longest one call may take (ms); past it the model gets a clear error. Default 60 000. Opening the server and
   * listing its tools get at least 30 s whatever this is.
   */
  timeoutMs?: number;
  /** How long a listed set of tools is trusted (ms) before it is asked again. Default 300 000. */
  listTtlMs?: number;
  /**
   * The user credential its calls carry (HTTP connections; see FunctionTool's `auth`): sent as the scheme says
   * (a header, a query parameter, `Authorization`); an HTTP 401 deletes it and asks the user again. Listing the
   * tools uses the connection's own headers.
   */
  auth?: ToolAuth;
}

const names = z.array(z.string().min(1, 'a tool name is not empty')).optional();

export const optionsSchema = z.object({
  connection: z.union(
    [
      z.strictObject({
        command: z.string().min(1, 'name the command that starts the server'),
        args: z.array(z.string()).optional(),
        env: z.record(z.string(), z.string()).optional(),
        cwd: z.string().optional(),
      }),
      z.strictObject({
        url: z.url({ error: 'write the server URL, e.g. "http://127.0.0.1:3001/mcp"' }),
        headers: z.record(z.string(), z.string()).optional(),
        transport: z.enum(['streamable-http', 'sse']).optional(),
      }),
    ],
    { error: 'write connection as { command, args? } (stdio) or { url, headers? } (HTTP)' },
  ),
  name: z.string().min(1).optional(),
  toolFilter: names,
  prefix: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,31}$/, 'use letters, digits and _ (e.g. "github")')
    .optional(),
  requireConfirmation: z.union([z.boolean(), z.array(z.string().min(1))]).optional(),
  idempotent: names,
  timeoutMs: z.number().int().positive().optional(),
  listTtlMs: z.number().int().positive().optional(),
  auth: z.unknown().optional(),
});
