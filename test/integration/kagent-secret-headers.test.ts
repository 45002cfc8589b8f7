/**
 * Secrets in MCP headers: a kagent folder whose RemoteMCPServer gets its `Authorization` header from `headersFrom`
 * (a Secret's key, read from the environment variable of that name). A real MCP server (test/fixtures/mcp-server.ts
 * over Streamable HTTP, a child process) answers only requests carrying exactly that header; the run's tool call
 * reaches it; the secret appears in no stored row, API answer or log line (the auth tests' secret scan). Without the
 * variable, the engine refuses to start, naming it with the manifest's file:line:col.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { createEngine, ScriptedModel, type Engine } from '../../src/index.js';
import { apiClient } from '../support/client/http-client.js';
import { expectNoSecrets, scannedRows } from '../support/assert/secret-scan.js';
import { createTestDatabase } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

const SERVER = join(import.meta.dirname, '../fixtures/mcp-server.ts');
const VARIABLE = 'AGENTLOOM_TEST_MCP_AUTHORIZATION';
const TOKEN = `planted-mcp-token-${randomBytes(12).toString('hex')}`;
const AUTHORIZATION = `Bearer ${TOKEN}`;

const dir = mkdtempSync(join(tmpdir(), 'agentloom-kagent-secret-headers-'));
const log = join(dir, 'calls.jsonl');
const logLines: string[] = [];
const answers: string[] = [];
let server: ChildProcess;
let url: string;
let engine: Engine | undefined;
let api: ApiApp | undefined;

function manifests(mcpUrl: string): string {
  return `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata: { name: echoer, namespace: kagent }
spec:
  description: Echoes through the MCP server
  declarative:
    systemMessage: Echo what the user says.
    modelConfig: scripted
    tools:
      - type: McpServer
        mcpServer: { apiGroup: kagent.dev, kind: RemoteMCPServer, name: echo-server, toolNames: [echo] }
---
apiVersion: kagent.dev/v1alpha2
kind: RemoteMCPServer
metadata: { name: echo-server, namespace: kagent }
spec:
  description: the test server, behind a bearer token
  url: ${mcpUrl}
  headersFrom:
    - name: Authorization
      valueFrom: { type: Secret, name: mcp-tokens, key: ${VARIABLE} }
`;
}

const model = new ScriptedModel({
  respond: (turn) => {
    if (turn.callIndex === 0) return { functionCalls: [{ name: 'echo', args: { text: 'hello' } }] };
    const response = turn.contents.at(-1)?.parts.find((p) => p.functionResponse)?.functionResponse?.response;
    return `the server said: ${JSON.stringify(response)}`;
  },
});

beforeAll(async () => {
  server = spawn(process.execPath, ['--import', 'tsx', SERVER, '--http', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, MCP_CALL_LOG: log, MCP_REQUIRED_AUTHORIZATION: AUTHORIZATION },
  });
  let out = '';
  server.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const port = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
    timeoutMs: 60_000,
    what: 'the MCP server to listen',
  });
  url = `http://127.0.0.1:${port}/mcp`;
  writeFileSync(join(dir, 'echoer.yaml'), manifests(url));
});

afterAll(async () => {
  delete process.env[VARIABLE];
  await api?.close();
  await engine?.close();
  server?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function calls(): { method?: string; tool?: string; authorization?: string; args?: unknown }[] {
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { method?: string; tool?: string; authorization?: string });
}

describe('a kagent RemoteMCPServer with its Authorization header from headersFrom', () => {
  it('refuses to start without the variable, naming it at the manifest line', async () => {
    delete process.env[VARIABLE];
    const started = createEngine({
      apps: dir,
      models: { scripted: model },
      database: { pglite: 'memory' },
    });
    await expect(started).rejects.toMatchObject({ code: 'VALIDATION' });
    await expect(started).rejects.toThrow(
      `${join(dir, 'echoer.yaml')}:21:57: spec.headersFrom[0].valueFrom.key: the environment has no variable ${VARIABLE} (a valueFrom is read from the variable its key names): set it`,
    );
  });

  it('sends the header the server requires; the secret is in no row, API answer or log line', async () => {
    // The server checks: a request without the header is refused.
    const bare = await fetch(url, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(bare.status).toBe(401);

    process.env[VARIABLE] = AUTHORIZATION;
    const stream = { write: (line: string) => void logLines.push(line) };
    engine = await createEngine({
      apps: dir,
      models: { scripted: model },
      database: await createTestDatabase(),
      queue: 'local',
      logger: pino({ level: 'trace' }, stream),
    });
    api = await createApiServer({ engine, processMetrics: false, logger: pino({ level: 'trace' }, stream) });
    const base = await api.listen({ port: 0, host: '127.0.0.1' });
    const http = apiClient({ base, requireOk: true, onAnswer: (text) => answers.push(text) });

    const { invocationId } = (
      await http('POST', '/v1/apps/echoer/invocations', {
        userId: 'ann',
        input: 'hi',
      })
    ).body;
    await engine.wait(invocationId as string, { timeoutMs: 60_000 });
    const run = (await http('GET', `/v1/invocations/${String(invocationId)}`)).body;
    expect(run.status).toBe('completed');
    expect(run.output).toBe(
      'the server said: {"content":[{"type":"text","text":"echo: hello"}],"isError":false}',
    );
    // The server saw the header on every request, the tool call among them, and refused none of the engine's.
    const seen = calls();
    expect(seen.filter((c) => c.authorization === 'matched').map((c) => c.method)).toEqual(
      expect.arrayContaining(['initialize', 'tools/list', 'tools/call']),
    );
    expect(seen.filter((c) => c.authorization === 'refused')).toHaveLength(1); // the bare request above
    expect(seen.filter((c) => c.tool === 'echo')).toMatchObject([{ args: { text: 'hello' } }]);

    await http('GET', `/v1/invocations/${String(invocationId)}/events`);
    await http('GET', `/v1/sessions/${String(run.sessionId)}`);
    await http('GET', '/v1/apps');
    const rows = await scannedRows(engine);
    expect(rows.length).toBeGreaterThan(5);
    expect(logLines.length).toBeGreaterThan(10);
    expectNoSecrets([TOKEN], { rows, answers, logLines });
  });
});
