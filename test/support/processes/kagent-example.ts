/**
 * examples/kagent as the tests run it: a copy in a temp folder whose MCP servers are this machine's — the stdio
 * MCPServer runs the repo's examples/mcp/notes-server.mjs, and the RemoteMCPServer points at a notes server over
 * Streamable HTTP this helper starts on a free port (the example says 3001, which a test cannot count on). Nothing
 * else of the manifests changes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './cli.js';
import { waitFor } from '../assert/wait-for.js';

export const NOTES_SERVER = join(REPO, 'examples/mcp/notes-server.mjs');

/** A copy of examples/kagent wired to local notes servers; `close` stops the HTTP one and removes the copy. */
export async function kagentExample(): Promise<{ dir: string; url: string; close: () => Promise<void> }> {
  const http: ChildProcess = spawn(process.execPath, [NOTES_SERVER, '--http', '0'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  http.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const url = await waitFor(() => /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(out)?.[1], {
    timeoutMs: 60_000,
    what: 'the notes MCP server to listen',
  });
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-kagent-example-'));
  cpSync(join(REPO, 'examples/kagent'), dir, { recursive: true });
  const servers = join(dir, 'mcp-servers.yaml');
  writeFileSync(
    servers,
    readFileSync(servers, 'utf8')
      .replace('../mcp/notes-server.mjs', NOTES_SERVER)
      .replace('http://127.0.0.1:3001/mcp', url),
  );
  return {
    dir,
    url,
    close: async () => {
      http.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
