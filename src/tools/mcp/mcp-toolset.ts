/**
 * McpToolset: the tools of an MCP server offered to an LlmAgent, the durable way. A `tools/call` is a network side
 * effect, so each call goes through the engine's tool-call journal like any tool: its response (the result's
 * `content`, `structuredContent` and `isError`) is stored before the run goes on and never asked for again, and
 * a tool not listed `idempotent` is `unsafe` — a call whose response was not stored when its worker died becomes
 * an in-doubt pause for a human, never a blind re-send. Every call carries the call's idempotency key in
 * `_meta["dev.agentloom/idempotencyKey"]` so a server can deduplicate a re-send it was told is safe. No call that
 * may have reached the server is retried automatically; opening the connection is (nothing was sent yet).
 *
 * The tool list is asked once per connection and cached in this process: refreshed when the server says it
 * changed (`notifications/tools/list_changed`) or after `listTtlMs`, never on every model call. The app's
 * definition hash covers this configuration, not what the server lists.
 */
import type { Logger } from 'pino';
import { withDeadline } from '../../core/deadline.js';
import { AgentloomError, AuthError } from '../../core/errors.js';
import { parseToolAuth, publicAuthConfig, type ToolAuth } from '../auth.js';
import { connectionWith, isUnauthorized, poolKey, refused } from './mcp-auth.js';
import { zodIssues } from '../../core/validation.js';
import type { ToolDeclaration } from '../../models/model.js';
import type { SideEffects, Tool, ToolContext } from '../tool.js';
import type { Toolset, ToolsetContext } from '../toolset.js';
import type { ElicitResult, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describeServer, loadMcpSdk, McpConnection, type McpConnectionOptions } from './mcp-connection.js';
import { optionsSchema, type McpToolsetOptions } from './mcp-options.js';

export type { McpToolsetOptions };

/** The SDK's own request timeout: a day (our deadline decides; see call). */
const SDK_TIMEOUT_MS = 86_400_000;
/**
 * Longest the opening of a server's connection may take, and the least a listing of its tools is given (ms). Not
 * the calls' `timeoutMs`: a stdio server is a process to start and a handshake, slower on a busy machine than the
 * one call a short `timeoutMs` is meant for.
 */
const SETUP_TIMEOUT_MS = 30_000;

/** The `_meta` key of a call's idempotency key. */
export const IDEMPOTENCY_META_KEY = 'dev.agentloom/idempotencyKey';

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/** A tool of an MCP server as the server lists it. */
interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The response a call's result is stored as. */
function responseOf(result: Record<string, unknown>): Record<string, unknown> {
  return {
    content: result.content ?? [],
    ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
    isError: result.isError === true,
  };
}

/** The tools of an MCP server (see the file's comment). */
export class McpToolset implements Toolset {
  readonly isToolset = true as const;
  readonly name: string;
  private readonly options: McpToolsetOptions;
  readonly auth: ToolAuth | undefined;
  /** Connections not serving a call now (by their options' digest), and all of them (see {@link lease}). */
  private readonly idle = new Map<string, McpConnection[]>();
  private readonly connections = new Set<McpConnection>();
  private listed: { at: number; tools: Tool[] } | undefined;
  private listing: Promise<Tool[]> | undefined;

  constructor(options: McpToolsetOptions) {
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new AgentloomError('VALIDATION', `McpToolset: ${zodIssues(parsed.error)}`, {
        details: { field: String(parsed.error.issues[0]?.path[0] ?? 'connection') },
      });
    }
    this.options = options;
    this.name = options.name ?? options.prefix ?? serverName(options.connection);
    this.auth = options.auth === undefined ? undefined : parseToolAuth(options.auth, this.name);
    if (this.auth && !('url' in options.connection)) {
      throw new AgentloomError(
        'VALIDATION',
        `McpToolset "${this.name}": auth needs an HTTP connection ({ url })`,
        {
          details: { field: 'auth' },
        },
      );
    }
  }

  /**
   * Runs `work` on a connection no other call uses meanwhile: an idle one, or a new one. A server's question
   * (elicitation) names no call, so a connection serves one call at a time and its questions are that call's.
   * A worker thus holds as many connections (stdio: child processes) as calls it runs at once on this server.
   */
  private async lease<T>(
    work: (connection: McpConnection) => Promise<T>,
    options: McpConnectionOptions = this.options.connection,
  ): Promise<T> {
    const key = poolKey(options);
    const idle = this.idle.get(key) ?? [];
    this.idle.set(key, idle);
    let connection = idle.pop();
    if (!connection) {
      connection = new McpConnection(this.name, options, {
        openTimeoutMs: SETUP_TIMEOUT_MS,
        onToolListChanged: () => {
          this.listed = undefined;
        },
      });
      this.connections.add(connection);
    }
    let keep = true;
    try {
      return await work(connection);
    } catch (err) {
      // A refused credential: this connection's headers are no good any more.
      keep = !(err instanceof AuthError);
      throw err;
    } finally {
      connection.onElicit = undefined;
      // Unless the toolset was closed meanwhile.
      if (keep && this.connections.has(connection)) idle.push(connection);
      else if (this.connections.delete(connection)) void connection.close();
    }
  }

  /** Longest one call may take (ms). */
  get timeoutMs(): number {
    return this.options.timeoutMs ?? 60_000;
  }

  async tools(ctx: ToolsetContext): Promise<Tool[]> {
    const ttl = this.options.listTtlMs ?? 300_000;
    if (this.listed && Date.now() - this.listed.at < ttl) return this.listed.tools;
    this.listing ??= this.list(ctx.logger).finally(() => {
      this.listing = undefined;
    });
    return this.listing;
  }

  definition(): Record<string, unknown> {
    const { connection } = this.options;
    return {
      mcp: {
        name: this.name,
        // Header values and environment values may be secrets: their names only.
        connection:
          'url' in connection
            ? {
                url: connection.url,
                transport: connection.transport ?? 'streamable-http',
                headers: Object.keys(connection.headers ?? {}).sort(),
              }
            : {
                // Not the folder it runs in: that is where this machine keeps the app, not what the app is.
                command: connection.command,
                args: connection.args ?? [],
                env: Object.keys(connection.env ?? {}).sort(),
              },
        toolFilter: this.options.toolFilter ?? null,
        prefix: this.options.prefix ?? null,
        requireConfirmation: this.options.requireConfirmation ?? false,
        idempotent: this.options.idempotent ?? [],
        timeoutMs: this.timeoutMs,
        ...(this.auth ? { auth: publicAuthConfig(this.auth) } : {}),
      },
    };
  }

  async close(): Promise<void> {
    this.listed = undefined;
    const all = [...this.connections];
    this.connections.clear();
    this.idle.clear();
    await Promise.all(all.map((c) => c.close()));
  }

  private async list(logger: Logger | undefined): Promise<Tool[]> {
    const listed = await this.lease(async (connection) => {
      const client = await connection.client(logger);
      const tools: ListedTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, {
          timeout: Math.max(this.timeoutMs, SETUP_TIMEOUT_MS),
        });
        tools.push(...(page.tools as ListedTool[]));
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
    const filter = this.options.toolFilter && new Set(this.options.toolFilter);
    const tools: Tool[] = [];
    for (const tool of listed) {
      if (filter && !filter.has(tool.name)) continue;
      const exposed = this.options.prefix ? `${this.options.prefix}_${tool.name}` : tool.name;
      if (!NAME.test(exposed)) {
        logger?.warn(
          { mcpServer: this.name, tool: tool.name },
          `MCP server "${this.name}": tool "${tool.name}" is not offered: a model's function name is letters, digits, _ . - (at most 64)`,
        );
        continue;
      }
      tools.push(new McpTool(this, tool, exposed, logger));
    }
    if (filter) {
      const missing = [...filter].filter((name) => !listed.some((t) => t.name === name));
      if (missing.length > 0) {
        logger?.warn(
          { mcpServer: this.name, missing },
          `MCP server "${this.name}" lists no tool ${missing.map((m) => `"${m}"`).join(', ')} of toolFilter`,
        );
      }
    }
    tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.listed = { at: Date.now(), tools };
    return tools;
  }

  /** Whether a call of the server's tool `name` needs a human's confirmation. */
  confirms(name: string): boolean {
    const { requireConfirmation } = this.options;
    return Array.isArray(requireConfirmation)
      ? requireConfirmation.includes(name)
      : requireConfirmation === true;
  }

  /** Whether the server's tool `name` may be sent again after a crash. */
  sideEffectsOf(name: string): SideEffects {
    return this.options.idempotent?.includes(name) ? 'idempotent' : 'unsafe';
  }

  /**
   * Calls the server's tool `name` (opening a connection if needed): the result, or an error. A question the
   * server asks meanwhile goes to the user (ctx.elicit) and waits up to `timeoutMs` for an answer; the time it
   * waits does not count against the call's own `timeoutMs`.
   */
  async call(
    name: string,
    args: Record<string, unknown>,
    ctx: ToolContext,
    logger: Logger | undefined,
  ): Promise<Record<string, unknown>> {
    const { connection: own } = this.options;
    const options =
      this.auth && ctx.credential && 'url' in own ? connectionWith(own, this.auth, ctx.credential) : own;
    return this.lease(async (connection) => {
      const client = await connection.client(logger);
      const timeoutMs = this.timeoutMs;
      let hold: (() => () => void) | undefined;
      /** The call's own signal: aborted when the run is cancelled or the deadline passes (the server is told). */
      let sent: AbortSignal | undefined;
      connection.onElicit = async (params) => {
        if (params.mode === 'url') return { action: 'decline' };
        if (sent?.aborted) throw await unanswered(this.name);
        const release = hold?.();
        try {
          const answer = await ctx.elicit({
            message: params.message,
            requestedSchema: params.requestedSchema as Record<string, unknown>,
            source: this.name,
            timeoutMs,
          });
          // Withdrawn with the call (the run was cancelled): nobody answered. A result would read as the user's own
          // `cancel`, and the server may take it before our notifications/cancelled (its SDK handles a reply at once
          // and a notification a tick later, so when both come in one read the reply wins) and finish the call on
          // it. An error only ends the server's wait, whichever of the two it handles first.
          if (answer.withdrawn || sent?.aborted) throw await unanswered(this.name);
          return answer.action === 'accept'
            ? { action: 'accept', content: answer.content as ElicitResult['content'] }
            : { action: answer.action };
        } finally {
          release?.();
        }
      };
      try {
        const result = await withDeadline(
          // Connecting may have taken a while: the lease check is the last thing before the call leaves.
          (signal) => {
            sent = signal;
            return ctx.sendLeased(() =>
              client.callTool(
                { name, arguments: args, _meta: { [IDEMPOTENCY_META_KEY]: ctx.idempotencyKey } },
                undefined,
                {
                  signal,
                  // Ours is the deadline (it names the server and the tool, and stops while the user is asked).
                  timeout: SDK_TIMEOUT_MS,
                  onprogress: ({ progress, total, message }) =>
                    ctx.reportProgress({
                      progress,
                      ...(total !== undefined ? { total } : {}),
                      ...(message !== undefined ? { message } : {}),
                    }),
                },
              ),
            );
          },
          {
            parent: ctx.signal,
            timeoutMs,
            holds: (h) => {
              hold = h;
            },
            error: () =>
              new AgentloomError(
                'TIMEOUT',
                `MCP server "${this.name}" did not answer tool "${name}" within ${timeoutMs} ms; raise timeoutMs on the McpToolset if it needs longer`,
                { details: { mcpServer: this.name, tool: name, timeoutMs } },
              ),
          },
        );
        return responseOf(result as Record<string, unknown>);
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason ?? err;
        if (this.auth && isUnauthorized(err)) throw refused(this.name, name, err);
        logger?.warn({ mcpServer: this.name, tool: name, err }, `MCP call of "${name}" failed`);
        if (err instanceof AgentloomError) throw err;
        throw new AgentloomError(
          'TOOL_ERROR',
          `MCP server "${this.name}" failed tool "${name}": ${err instanceof Error ? err.message : String(err)}`,
          { details: { mcpServer: this.name, tool: name }, cause: err },
        );
      }
    }, options);
  }
}

/** One tool of an MCP server, as the model sees it. */
class McpTool implements Tool {
  readonly isLongRunning = false;
  readonly sideEffects: SideEffects;
  readonly description: string;
  readonly auth: ToolAuth | undefined;

  constructor(
    private readonly toolset: McpToolset,
    private readonly listed: ListedTool,
    readonly name: string,
    private readonly logger: Logger | undefined,
  ) {
    this.description = listed.description ?? '';
    this.sideEffects = toolset.sideEffectsOf(listed.name);
    this.auth = toolset.auth;
  }

  declaration(): ToolDeclaration {
    const { $schema: _schema, ...parameters } = this.listed.inputSchema;
    return { name: this.name, description: this.description, parameters };
  }

  requiresConfirmation(): boolean {
    return this.toolset.confirms(this.listed.name);
  }

  run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    return this.toolset.call(this.listed.name, args, ctx, this.logger);
  }
}

/**
 * The reply to a server's question whose call we cancelled: an error, since nobody answered. (The SDK replies the
 * same code, "Request was cancelled", when a request it was asked to send was cancelled.)
 */
async function unanswered(server: string): Promise<McpError> {
  // The SDK is loaded: a question comes over a connection it opened.
  const { ErrorCode, McpError } = await loadMcpSdk();
  return new McpError(
    ErrorCode.ConnectionClosed,
    `the call was cancelled: nobody will answer MCP server "${server}"`,
  );
}

/** A name for a server without one: its command's base name, or its host. */
function serverName(connection: McpConnectionOptions): string {
  if ('url' in connection) {
    try {
      return new URL(connection.url).host;
    } catch {
      return connection.url;
    }
  }
  const base = describeServer({ command: connection.command }).split('/').pop();
  return base || connection.command;
}
