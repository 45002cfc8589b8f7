/**
 * The setting of the auth gate's OAuth2 tests (test/integration/tool-auth-oauth2*.test.ts): a local OAuth2
 * provider (examples/oauth2/fake-provider.ts: PKCE S256 checked, codes single use) with two clients, an engine on
 * PostgreSQL behind a real API server, and its apps — `calendar` (one call of an authorization-code tool),
 * `digest` (two such calls in parallel), `metrics` (a client-credentials tool) and, with `mcp`, `notes` (an MCP
 * toolset whose server, test/fixtures/mcp-server.ts, accepts only the provider's tokens). Every API answer and
 * log line is kept, for the scan for secrets; each tool run is recorded with a digest of its token (never the
 * token). Made with beforeAll/afterAll of the calling file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, expect } from 'vitest';
import { createApiServer, type ApiApp } from '../../../src/api/index.js';
import {
  AuthError,
  createEngine,
  FunctionTool,
  LlmAgent,
  McpToolset,
  ParallelAgent,
  ScriptedModel,
  type Engine,
} from '../../../src/index.js';
import { FakeOAuthServer } from '../../../examples/oauth2/fake-provider.js';
import { callsToolOnce, lastResponse } from '../../fixtures/agents.js';
import { REPO } from '../processes/cli.js';
import { freePort } from '../services/local-services.js';
import { createTestDatabase } from '../services/services.js';
import { waitFor } from '../assert/wait-for.js';
import { apiClient, type Json } from '../client/http-client.js';

export type { Json } from '../client/http-client.js';

/** One tool run: the tool, the run and a digest of the token it got. */
export interface ToolRun {
  tool: string;
  run: string;
  token: string;
  status: number;
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 12);
}

/** The provider, the engine and API server, and what the tests ask of them (fields set in beforeAll). */
export function oauth2Flow(options: { mcp?: boolean } = {}) {
  const provider = new FakeOAuthServer();
  const calendarClient = provider.addClient('calendar-app');
  const serviceClient = provider.addClient('metrics-service');
  const mcpLog = join(mkdtempSync(join(tmpdir(), 'agentloom-oauth2-mcp-')), 'calls.jsonl');
  const logLines: string[] = [];
  const answers: string[] = [];
  const seen: ToolRun[] = [];
  let mcpServer: ChildProcess | undefined;
  let api: ApiApp | undefined;

  /** A tool that calls the provider's protected resource with the user's token; a 401 is an AuthError. */
  function resourceTool(name: string, auth: ConstructorParameters<typeof FunctionTool>[0]['auth']) {
    return new FunctionTool({
      name,
      description: 'reads the protected resource',
      auth,
      execute: async (_args, ctx) => {
        const credential = ctx.credential;
        if (credential?.authType !== 'oauth2') throw new Error('no OAuth2 credential');
        const token = credential.oauth2.accessToken;
        const response = await fetch(`${provider.url}/resource`, {
          headers: { authorization: `Bearer ${token}` },
        });
        seen.push({ tool: name, run: ctx.invocationId, token: digest(token), status: response.status });
        if (response.status === 401) throw new AuthError(`${name}: the provider refused the token`);
        return { ok: true };
      },
    });
  }

  /** The `notes` app: an MCP toolset needing a token the provider accepts (its server answers 401 otherwise). */
  async function notesApp(providerUrl: string, auth: object) {
    mcpServer = spawn(
      process.execPath,
      ['--import', 'tsx', join(REPO, 'test/fixtures/mcp-server.ts'), '--http', '0'],
      {
        cwd: REPO,
        env: { ...process.env, MCP_CALL_LOG: mcpLog, MCP_AUTH_URL: providerUrl },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    mcpServer.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const mcpPort = await waitFor(() => /listening (\d+)/.exec(out)?.[1], {
      timeoutMs: 60_000,
      what: 'the MCP test server to listen',
    });
    const notes = new McpToolset({
      connection: { url: `http://127.0.0.1:${mcpPort}/mcp` },
      toolFilter: ['echo'],
      auth: { ...auth, credentialKey: 'notes' } as ConstructorParameters<typeof McpToolset>[0]['auth'],
    });
    const agent = new LlmAgent({
      name: 'note_taker',
      model: new ScriptedModel({
        respond: (turn) =>
          turn.callIndex === 0
            ? { functionCalls: [{ name: 'echo', args: { text: 'hello notes' } }] }
            : `done: ${JSON.stringify(lastResponse(turn))}`,
      }),
      tools: [notes],
    });
    return { name: 'notes', agent };
  }

  /** The API server's client; every answer's text is kept for the scan for secrets. */
  const http = apiClient({ base: (): string => flow.base, onAnswer: (text) => answers.push(text) });
  const flow = {
    provider,
    calendarClient,
    serviceClient,
    mcpLog,
    logLines,
    answers,
    seen,
    engine: undefined as unknown as Engine,
    base: '',

    http,

    async start(app: string, userId: string): Promise<string> {
      const { body } = await flow.http('POST', `/v1/apps/${app}/invocations`, { userId, input: 'go' });
      return body.invocationId as string;
    },

    async settled(id: string): Promise<Json> {
      await flow.engine.wait(id, { timeoutMs: 60_000 });
      return (await flow.http('GET', `/v1/invocations/${id}`)).body;
    },

    async pausedForAuth(id: string): Promise<Json> {
      const view = await flow.settled(id);
      expect(view.status).toBe('paused');
      const pending = view.pending as Json[];
      expect(pending).toHaveLength(1);
      expect(pending[0]).toMatchObject({ kind: 'auth' });
      return pending[0]!;
    },

    /** The user consents: the provider redirects to the callback URL (returned, not followed). */
    async consent(authorizationUrl: string): Promise<string> {
      const response = await fetch(authorizationUrl, { redirect: 'manual' });
      expect(response.status).toBe(302);
      return response.headers.get('location') as string;
    },

    async credentialRows(): Promise<{ user_id: string; secret: string }[]> {
      const { rows } = (await flow.engine.store.db.execute(
        sql.raw(`select user_id, encode(secret, 'hex') as secret from credentials order by user_id`),
      )) as unknown as { rows: { user_id: string; secret: string }[] };
      return rows;
    },

    /** Every secret of the flow so far: the clients' secrets and what the provider issued (codes, tokens). */
    secrets(): string[] {
      return [calendarClient.secret, serviceClient.secret, ...provider.issued];
    },
  };

  beforeAll(async () => {
    const providerUrl = await provider.start();
    const port = await freePort();
    const calendarAuth = {
      authScheme: {
        type: 'oauth2' as const,
        flows: {
          authorizationCode: {
            authorizationUrl: `${providerUrl}/authorize`,
            tokenUrl: `${providerUrl}/token`,
            scopes: { 'calendar.read': 'read your calendar' },
          },
        },
      },
      rawAuthCredential: {
        authType: 'oauth2' as const,
        oauth2: { clientId: calendarClient.id, clientSecret: calendarClient.secret },
      },
      credentialKey: 'calendar',
    };
    const calendar = resourceTool('list_events', calendarAuth);
    const metrics = resourceTool('fetch_metrics', {
      authScheme: {
        type: 'oauth2',
        flows: { clientCredentials: { tokenUrl: `${providerUrl}/token`, scopes: {} } },
      },
      rawAuthCredential: {
        authType: 'oauth2',
        oauth2: { clientId: serviceClient.id, clientSecret: serviceClient.secret },
      },
    });
    const stream = { write: (line: string) => void logLines.push(line) };
    flow.engine = await createEngine({
      apps: [
        { name: 'calendar', agent: callsToolOnce('planner', calendar) },
        {
          name: 'digest',
          agent: new ParallelAgent({
            name: 'both',
            subAgents: [callsToolOnce('left', calendar), callsToolOnce('right', calendar)],
          }),
        },
        { name: 'metrics', agent: callsToolOnce('watcher', metrics) },
        ...(options.mcp ? [await notesApp(providerUrl, calendarAuth)] : []),
      ],
      database: await createTestDatabase(),
      queue: 'local',
      secretKey: randomBytes(32).toString('base64'),
      publicUrl: `http://127.0.0.1:${port}`,
      logger: pino({ level: 'trace' }, stream),
    });
    api = await createApiServer({
      engine: flow.engine,
      processMetrics: false,
      logger: pino({ level: 'trace' }, stream),
    });
    flow.base = await api.listen({ port, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await api?.close();
    await flow.engine?.close();
    mcpServer?.kill('SIGKILL');
    await provider.stop();
  });

  return flow;
}
