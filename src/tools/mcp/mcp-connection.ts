/**
 * One MCP client connection of a toolset, in this process: opened on first use (a stdio server's child process,
 * or a Streamable HTTP / SSE session), opened again after it closed (the child died, the server went away), and
 * closed with the toolset. Opening is retried: nothing has been sent yet, so a retry cannot repeat an effect.
 * What the server sends of its own accord is routed to the toolset (its tool list changed) or the log (stderr).
 * The MCP SDK is imported by the first connection that opens, not with this file: a process whose apps have no MCP
 * toolset never loads it.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { AgentloomError } from '../../core/errors.js';

/** A server started as a child process, spoken to over its stdin and stdout. */
export interface McpStdioConnection {
  command: string;
  args?: string[];
  /** Added to the default environment MCP gives a server (PATH, HOME, …); not the whole of this process's. */
  env?: Record<string, string>;
  cwd?: string;
}

/** A server reached over HTTP: Streamable HTTP (default) or the legacy HTTP+SSE transport. */
export interface McpHttpConnection {
  url: string;
  headers?: Record<string, string>;
  transport?: 'streamable-http' | 'sse';
}

/** Where an MCP server is. */
export type McpConnectionOptions = McpStdioConnection | McpHttpConnection;

/** How many times opening a connection is tried before the call fails. */
const OPEN_ATTEMPTS = 3;
const OPEN_BACKOFF_MS = 250;

/** The client name and version agentloom introduces itself with. */
const CLIENT_INFO = { name: 'agentloom', version: '1' };

/** The parts of the MCP SDK a connection uses, imported once, when the first connection opens. */
async function importSdk() {
  const [client, sse, stdio, streamableHttp, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { ...client, ...sse, ...stdio, ...streamableHttp, ...types };
}

type McpSdk = Awaited<ReturnType<typeof importSdk>>;

let sdk: Promise<McpSdk> | undefined;

/** The MCP SDK (see {@link importSdk}); an import that failed is tried again by the next caller. */
export function loadMcpSdk(): Promise<McpSdk> {
  sdk ??= importSdk().catch((err: unknown) => {
    sdk = undefined;
    throw err;
  });
  return sdk;
}

/** Describes a server for messages: its URL or its command line. */
export function describeServer(connection: McpConnectionOptions): string {
  return 'url' in connection ? connection.url : [connection.command, ...(connection.args ?? [])].join(' ');
}

/** Answers a server's elicitation (`elicitation/create`) for the call the connection serves now. */
export type ElicitationHandler = (
  params: ElicitRequest['params'],
  signal: AbortSignal,
) => Promise<ElicitResult>;

/** A lazily opened, reopened-when-lost client (see the file's comment). */
export class McpConnection {
  /**
   * Who answers the server's questions: set by the call this connection serves (a connection serves one call at a
   * time, since MCP does not say which open call a question belongs to). None → the question is declined.
   */
  onElicit: ElicitationHandler | undefined;
  private opening: Promise<Client> | undefined;
  /** The client opened last: only its closing forgets the connection. */
  private current: Client | undefined;

  constructor(
    /** The toolset's name, in logs and errors. */
    private readonly name: string,
    private readonly connection: McpConnectionOptions,
    private readonly options: { openTimeoutMs: number; onToolListChanged: () => void },
  ) {}

  /** The open client, opening it first if needed. */
  client(logger: Logger | undefined): Promise<Client> {
    this.opening ??= this.open(logger).catch((err: unknown) => {
      this.opening = undefined;
      throw err;
    });
    return this.opening;
  }

  /** Closes the client (and a stdio server's process); the next call opens a new one. */
  async close(): Promise<void> {
    const opening = this.opening;
    this.opening = undefined;
    this.current = undefined;
    const client = await opening?.catch(() => undefined);
    await client?.close().catch(() => undefined);
  }

  private async open(logger: Logger | undefined): Promise<Client> {
    const mcp = await loadMcpSdk();
    const { Client, ElicitRequestSchema, ToolListChangedNotificationSchema } = mcp;
    let last: unknown;
    for (let attempt = 1; attempt <= OPEN_ATTEMPTS; attempt++) {
      // Form-mode elicitation: a server may ask the user for input during a call (ToolContext.elicit).
      const client = new Client(CLIENT_INFO, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
        const handler = this.onElicit;
        if (!handler) {
          logger?.warn(
            { mcpServer: this.name },
            `MCP server "${this.name}" asked for input outside a tool call; declined`,
          );
          return { action: 'decline' };
        }
        return handler(request.params, extra.signal);
      });
      client.onclose = () => {
        // A lost connection (a stdio server that died): the next call opens a new one.
        if (this.current !== client) return;
        this.current = undefined;
        this.opening = undefined;
        logger?.info({ mcpServer: this.name }, 'MCP connection closed');
      };
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        this.options.onToolListChanged();
      });
      try {
        this.current = client;
        await client.connect(this.transport(mcp, logger), { timeout: this.options.openTimeoutMs });
        return client;
      } catch (err) {
        last = err;
        this.current = undefined;
        await client.close().catch(() => undefined);
        logger?.warn(
          { mcpServer: this.name, attempt, err },
          `MCP server "${this.name}" could not be reached (attempt ${attempt} of ${OPEN_ATTEMPTS})`,
        );
        if (attempt < OPEN_ATTEMPTS) await new Promise((done) => setTimeout(done, OPEN_BACKOFF_MS * attempt));
      }
    }
    throw new AgentloomError(
      'TOOL_ERROR',
      `MCP server "${this.name}" (${describeServer(this.connection)}) could not be reached: ${
        last instanceof Error ? last.message : String(last)
      }`,
      { retryable: true, details: { mcpServer: this.name }, cause: last },
    );
  }

  private transport(mcp: McpSdk, logger: Logger | undefined): Transport {
    const { connection } = this;
    const { SSEClientTransport, StdioClientTransport, StreamableHTTPClientTransport, getDefaultEnvironment } =
      mcp;
    if ('url' in connection) {
      const url = new URL(connection.url);
      const requestInit = connection.headers ? { headers: connection.headers } : undefined;
      return connection.transport === 'sse'
        ? new SSEClientTransport(url, requestInit ? { requestInit } : {})
        : new StreamableHTTPClientTransport(url, requestInit ? { requestInit } : {});
    }
    const transport = new StdioClientTransport({
      command: connection.command,
      args: connection.args ?? [],
      env: { ...getDefaultEnvironment(), ...connection.env },
      ...(connection.cwd !== undefined ? { cwd: connection.cwd } : {}),
      stderr: 'pipe',
    });
    // The server's stderr goes to the log, a line each.
    const stderr = transport.stderr as Readable | null;
    if (stderr) {
      createInterface({ input: stderr }).on('line', (line) =>
        logger?.info({ mcpServer: this.name, stderr: line }, 'MCP server stderr'),
      );
    }
    return transport;
  }
}
