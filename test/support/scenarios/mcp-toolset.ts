/**
 * The harness of the McpToolset tests (test/integration/mcp-toolset-*.test.ts): the MCP test server built with
 * @modelcontextprotocol/sdk (test/fixtures/mcp-server.ts) over stdio and over Streamable HTTP, the call log it
 * writes, scripted models that call one tool, the function responses an invocation stored, and per transport a
 * fresh toolset and PostgreSQL engine for each test, all closed after the file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import {
  type LlmAgent,
  McpToolset,
  ScriptedModel,
  type Engine,
  type McpConnectionOptions,
  type ScriptedTurn,
} from '../../../src/index.js';
import { REPO } from '../processes/cli.js';
import { backends, engineOn } from '../services/engines.js';
import { waitFor } from '../assert/wait-for.js';

export const SERVER = join(REPO, 'test/fixtures/mcp-server.ts');
export const postgres = backends.find((b) => b.name === 'postgres')!;

/** A temporary directory for this file's call logs and YAML files, removed after the file. */
export function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-mcp-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface LoggedCall {
  tool: string;
  args: Record<string, unknown>;
  meta?: Record<string, unknown>;
  end: 'done' | 'started' | 'cancelled';
  answer?: Record<string, unknown>;
}

/** What the server recorded in `log`. */
export function calls(log: string): LoggedCall[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedCall);
}

/** Calls one tool with `args` on its first model call, then answers with what it got back. */
export function replyOnce(tool: string, args: Record<string, unknown>) {
  return (turn: ScriptedTurn) => {
    if (turn.callIndex === 0) return { functionCalls: [{ name: tool, args }] };
    const last = [...turn.contents].reverse().find((c) => c.parts.some((p) => p.functionResponse));
    return `got ${JSON.stringify(last?.parts.find((p) => p.functionResponse)?.functionResponse?.response)}`;
  };
}

export function callsOnce(tool: string, args: Record<string, unknown>): ScriptedModel {
  return new ScriptedModel({ respond: replyOnce(tool, args) });
}

/** The function responses stored for the invocation's calls of `tool`. */
export async function storedResponses(
  engine: Engine,
  invocationId: string,
  tool: string,
): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const event of engine.events(invocationId)) {
    for (const part of event.content?.parts ?? []) {
      if (part.functionResponse?.name === tool) out.push(part.functionResponse.response);
    }
  }
  return out;
}

export interface Transport {
  name: string;
  /**
   * A connection to a server that writes its call log to `log`, with `env` added to its environment; a server
   * process this starts is added to `started`.
   */
  connect(log: string, env: Record<string, string>, started: ChildProcess[]): Promise<McpConnectionOptions>;
}

export const transports: Transport[] = [
  {
    name: 'stdio',
    connect: async (log, env) => ({
      command: process.execPath,
      args: ['--import', 'tsx', SERVER, '--stdio'],
      env: { ...env, MCP_CALL_LOG: log },
      cwd: REPO,
    }),
  },
  {
    name: 'Streamable HTTP',
    connect: async (log, env, started) => {
      const child = spawn(process.execPath, ['--import', 'tsx', SERVER, '--http', '0'], {
        cwd: REPO,
        env: { ...process.env, ...env, MCP_CALL_LOG: log },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      started.push(child);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const port = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
        timeoutMs: 60_000,
        what: 'the MCP test server to listen',
      });
      return { url: `http://127.0.0.1:${port}/mcp` };
    },
  },
];

/**
 * Inside a `describe` of one transport: `toolset` gives a fresh call log and toolset for one test (`env`: the
 * server's, besides its call log), `engineWith` an engine on PostgreSQL serving `agent` as the app `app`. The
 * engines are closed and the HTTP servers killed after the describe.
 */
export function mcpHarness(transport: Transport, dir: string) {
  let n = 0;
  const started: ChildProcess[] = [];
  const engines: Engine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    for (const child of started) child.kill('SIGKILL');
  });
  return {
    async toolset(
      options: Omit<ConstructorParameters<typeof McpToolset>[0], 'connection'> = {},
      env: Record<string, string> = {},
    ): Promise<{ toolset: McpToolset; log: string }> {
      const log = join(dir, `${transport.name.replace(/\W/g, '-')}-${++n}.jsonl`);
      const connection = await transport.connect(log, env, started);
      return { toolset: new McpToolset({ connection, ...options }), log };
    },
    async engineWith(agent: LlmAgent): Promise<Engine> {
      const engine = await engineOn(postgres, { apps: [{ name: 'app', agent }] });
      engines.push(engine);
      return engine;
    },
  };
}
