/**
 * Secrets in declarative files: native `auth:` on tool entries and MCP toolsets in the code option's
 * shape, every secret `{ valueFrom: { env } }`; header and variable maps; kagent `headersFrom` on an Agent's tools
 * and remote agent references; what looks like a secret in clear. The variables come from the `env` given to the
 * loader, so each case says which exist.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkAppsYaml, formatProblem, type EnvOptions } from '../../src/config/apps/load-apps.js';
import { isSensitiveName, looksLikeSecret } from '../../src/config/apps/shared/secret-refs.js';
import type { AgentTool, LlmAgent } from '../../src/index.js';
import {
  FunctionTool,
  RemoteA2aAgent,
  type McpToolset,
  type McpToolsetOptions,
  type Tool,
} from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-yaml-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

const lookup = new FunctionTool({ name: 'lookup', description: 'looks up', execute: () => ({ ok: true }) });
const other = new FunctionTool({ name: 'other', description: 'another', execute: () => ({}) });
const gated = new FunctionTool({
  name: 'gated',
  description: 'declares auth in code',
  auth: { authScheme: { type: 'http', scheme: 'bearer' } },
  execute: () => ({}),
});

async function check(files: Record<string, string>, options: EnvOptions) {
  const folder = join(dir, `case${count++}`);
  mkdirSync(folder);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
  return checkAppsYaml(folder, { tools: { lookup, gated, other } }, options);
}

async function native(tools: string, options: EnvOptions) {
  const folder = join(dir, `case${count++}`);
  mkdirSync(folder);
  writeFileSync(
    join(folder, 'app.yaml'),
    `app: a\nagents:\n  - name: assistant\n    model: gemini-2.5-flash\n    tools:\n${tools}`,
  );
  const checked = await checkAppsYaml(folder, { tools: { lookup, gated, other } }, options);
  const problems = checked.problems.map((p) => formatProblem(p).replace(`${folder}/`, ''));
  return { ...checked, problems, tools: (checked.apps[0]?.agent as LlmAgent | undefined)?.options.tools };
}

function optionsOf(toolset: unknown): McpToolsetOptions {
  return (toolset as { options: McpToolsetOptions }).options;
}

describe('what looks like a secret', () => {
  it('knows tokens, bearer credentials and long random words from names, URLs and settings', () => {
    for (const secret of [
      'sk-proj-abc123',
      'ghp_0123456789abcdefghijABCDEFGHIJ',
      'Bearer abcdefgh12345',
      'xoxb-1234-5678',
      'AKIAIOSFODNN7EXAMPLE',
      'aB3dE5fG7hJ9kL1mN3pQ5rS7',
      'c0ffee0123456789abcdef0123456789',
    ])
      expect(looksLikeSecret(secret), secret).toBe(true);
    for (const plain of [
      'OAUTH_CLIENT_SECRET',
      'calendar-app',
      'https://example.com/oauth2/authorize?x=1',
      'application/json',
      'kagent-openai',
      'AZURE_OPENAI_API_KEY_2',
      '/tmp/agentloom-mcp-Xq7Rb2Kp9/calls.jsonl',
      './servers/Notes7Server2Main.mjs',
    ])
      expect(looksLikeSecret(plain), plain).toBe(false);
    expect(
      ['Authorization', 'X-API-Key', 'GITHUB_TOKEN', 'cookie', 'db_password'].map(isSensitiveName),
    ).toEqual([true, true, true, true, true]);
    expect(['X-Tenant', 'Accept', 'LOG_LEVEL'].map(isSensitiveName)).toEqual([false, false, false]);
  });
});

describe('native YAML: auth on tool entries', () => {
  const oauth = (secret: string, extra = '') => `      - tool: lookup
        auth:
          authScheme:
            type: oauth2
            flows: { clientCredentials: { tokenUrl: https://id.example.com/token, scopes: { read: Read } } }
          rawAuthCredential:
            authType: oauth2
            oauth2: { clientId: { valueFrom: { env: CLIENT_ID } }, clientSecret: ${secret}${extra} }
`;

  it('gives a registered tool the code option, its secrets read from the environment', async () => {
    const { problems, tools, warnings } = await native(oauth('{ valueFrom: { env: CLIENT_SECRET } }'), {
      env: { CLIENT_ID: 'cal', CLIENT_SECRET: 's3cr3t' },
    });
    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    const tool = tools?.[0] as Tool;
    expect(tool).not.toBe(lookup);
    expect(tool.name).toBe('lookup');
    expect(tool.auth).toEqual({
      authScheme: {
        type: 'oauth2',
        flows: { clientCredentials: { tokenUrl: 'https://id.example.com/token', scopes: { read: 'Read' } } },
      },
      rawAuthCredential: { authType: 'oauth2', oauth2: { clientId: 'cal', clientSecret: 's3cr3t' } },
    });
    expect(await tool.run({}, {} as never)).toEqual({ ok: true });
    // Without auth, `{ tool: name }` is the name itself, as a plain entry.
    expect((await native('      - tool: lookup\n', {})).tools).toEqual(['lookup']);
  });

  it('reports a secret in clear, a missing variable, valueFrom where none is read, misspelt keys and the rules across fields', async () => {
    const { problems } = await native(
      `${oauth('hunter2', ', redirectUrl: https://x.example.com/cb')}      - tool: gated
        auth: { authScheme: { type: http, scheme: bearer } }
      - tool: exit_loop
        auth:
          authScheme: { type: apiKey, in: header, name: { valueFrom: { env: HEADER_NAME } } }
      - tool: other
        auth: { authScheme: { type: oauth2, flows: { clientCredentials: { tokenUrl: https://a.example.com/t } } } }
`,
      { env: {} },
    );
    expect(problems).toEqual([
      'app.yaml:13:53: agents[0].tools[0].auth.rawAuthCredential.oauth2.clientId.valueFrom.env: the environment has no variable CLIENT_ID (clientId is read from it): set it',
      'app.yaml:13:82: agents[0].tools[0].auth.rawAuthCredential.oauth2.clientSecret: clientSecret is a secret and is never written in the file: write { valueFrom: { env: CLIENT_SECRET } } and set CLIENT_SECRET in the environment of every process that serves the app',
      'app.yaml:13:91: agents[0].tools[0].auth.rawAuthCredential.oauth2.redirectUrl: unknown key "redirectUrl" in oauth2; did you mean "redirectUri"?',
      'app.yaml:15:15: agents[0].tools[1].auth: tool "gated" declares auth in code already: remove auth: here, or remove it from the tool\'s code',
      'app.yaml:18:70: agents[0].tools[2].auth.authScheme.name.valueFrom: authScheme.name is written in the file, not read from the environment: write it as text (valueFrom is for apiKey, token, password, clientSecret, clientId, username)',
      'app.yaml:20:15: agents[0].tools[3].auth.rawAuthCredential: an oauth2 scheme needs its client: rawAuthCredential: {authType: "oauth2", oauth2: {clientId, clientSecret}}',
    ]);
  });

  it('reads MCP headers, variables and auth; refuses credentials in clear under their names or by their look', async () => {
    const ok = await native(
      `      - mcp:
          url: http://127.0.0.1:3001/mcp
          headers: { Authorization: { valueFrom: { env: MCP_AUTH } }, X-Tenant: acme }
          auth: { authScheme: { type: apiKey, in: header, name: X-Key } }
      - mcp:
          command: node
          env: { GITHUB_TOKEN: { valueFrom: { env: GH } }, LOG_LEVEL: debug }
`,
      { env: { MCP_AUTH: 'Bearer from-env', GH: 'ghp_fromenv' } },
    );
    expect(ok.problems).toEqual([]);
    const [http, stdio] = (ok.tools ?? []).map(optionsOf);
    expect(http?.connection).toEqual({
      url: 'http://127.0.0.1:3001/mcp',
      headers: { Authorization: 'Bearer from-env', 'X-Tenant': 'acme' },
    });
    expect(http?.auth).toEqual({ authScheme: { type: 'apiKey', in: 'header', name: 'X-Key' } });
    expect(stdio?.connection).toMatchObject({ env: { GITHUB_TOKEN: 'ghp_fromenv', LOG_LEVEL: 'debug' } });
    // The definition (and its hash) names the headers, never their values.
    expect(JSON.stringify((ok.tools?.[0] as McpToolset).definition())).not.toContain('from-env');

    const bad = await native(
      `      - mcp:
          url: http://127.0.0.1:3001/mcp
          headers: { Authorization: Bearer abcdefgh12345, X-Trace: sk-proj-abc123 }
      - mcp:
          command: node
          env: { API_TOKEN: plain }
          auth: { authScheme: { type: http, scheme: bearer } }
`,
      {},
    );
    expect(bad.problems).toEqual([
      'app.yaml:8:37: agents[0].tools[0].mcp.headers.Authorization: header Authorization carries a credential, which is never written in the file: write { valueFrom: { env: AUTHORIZATION } } and set AUTHORIZATION in the environment of every process that serves the app',
      'app.yaml:8:68: agents[0].tools[0].mcp.headers.X-Trace: the value of header X-Trace looks like a credential, which is never written in the file: write { valueFrom: { env: X_TRACE } } and set X_TRACE in the environment of every process that serves the app',
      'app.yaml:10:11: agents[0].tools[1].mcp: auth apply to url: servers; remove them',
    ]);
  });
});

describe('kagent: headersFrom on tools and remote agents', () => {
  const server = `apiVersion: kagent.dev/v1alpha2
kind: RemoteMCPServer
metadata: { name: remote }
spec:
  url: http://127.0.0.1:3001/mcp
  headersFrom:
    - { name: Authorization, valueFrom: { type: Secret, name: s, key: SERVER_AUTH } }
    - { name: X-Tenant, value: acme }
`;
  const agent = (body: string) => `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata: { name: boss }
spec:
  declarative:
    systemMessage: hi
    modelConfig: gemini-2.5-flash
${body}`;

  it("sends a tool's headersFrom on top of its server's, and a remote subagent's headers and headersFrom", async () => {
    const { apps, problems } = await check(
      {
        'servers.yaml': server,
        'agent.yaml': agent(`    tools:
      - type: McpServer
        mcpServer: { kind: RemoteMCPServer, name: remote, toolNames: [echo] }
        headersFrom:
          - { name: Authorization, valueFrom: { type: Secret, name: s, key: TOOL_AUTH } }
    subagents:
      - agent:
          name: reviewer
          url: http://127.0.0.1:9/a2a/review
          headers: { X-Team: docs }
          headersFrom: [{ name: Authorization, valueFrom: { type: Secret, name: s, key: REVIEW_AUTH } }]
      - headersFrom: [{ name: X-Shared, valueFrom: { type: Secret, name: s, key: SHARED } }]
        workflow:
          type: Sequential
          agents: [{ name: remote-step, url: http://127.0.0.1:9/a2a/step }]
`),
      },
      {
        env: {
          SERVER_AUTH: 'Bearer server',
          TOOL_AUTH: 'Bearer tool',
          REVIEW_AUTH: 'Bearer review',
          SHARED: 'v',
        },
      },
    );
    expect(problems).toEqual([]);
    const tools = (apps[0]?.agent as LlmAgent).options.tools ?? [];
    expect(optionsOf(tools[0]).connection).toEqual({
      url: 'http://127.0.0.1:3001/mcp',
      headers: { Authorization: 'Bearer tool', 'X-Tenant': 'acme' },
    });
    const remote = (tools[1] as AgentTool).agent as RemoteA2aAgent;
    expect(remote).toBeInstanceOf(RemoteA2aAgent);
    expect(remote.headers).toEqual({ 'X-Team': 'docs', Authorization: 'Bearer review' });
    // A subagent's own headersFrom goes to its workflow's remote steps.
    const step = (tools[2] as AgentTool).agent.subAgents[0] as RemoteA2aAgent;
    expect(step.headers).toEqual({ 'X-Shared': 'v' });
  });

  it('reports headersFrom where nothing is sent, credentials in clear and apiKeySecretKey holding the key itself', async () => {
    const { problems, warnings } = await check(
      {
        'servers.yaml': `${server}---
apiVersion: kagent.dev/v1alpha1
kind: MCPServer
metadata: { name: local }
spec: { transportType: stdio, deployment: { cmd: node } }
---
apiVersion: kagent.dev/v1alpha2
kind: ModelConfig
metadata: { name: m }
spec: { provider: OpenAI, model: gpt-4.1, apiKeySecret: k, apiKeySecretKey: sk-proj-abcdef0123456789 }
`,
        'agent.yaml': `${agent(`    tools:
      - type: McpServer
        mcpServer: { kind: MCPServer, name: local, toolNames: [x] }
        headersFrom: [{ name: A, value: b }]
    subagents:
      - agent: { name: helper, headers: { X-Team: docs } }
      - agent: { name: far, url: http://127.0.0.1:9/a2a/far, headers: { Authorization: Bearer abcdefgh12345 } }
`)}
---
apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata: { name: helper }
spec: { declarative: { systemMessage: help, modelConfig: gemini-2.5-flash } }
`,
      },
      { env: {}, missingEnv: 'warning' },
    );
    expect(problems.map((p) => `${p.path}: ${p.message}`)).toEqual([
      'spec.declarative.tools[0].headersFrom: headersFrom is sent to servers over HTTP: "local" is a stdio MCPServer; remove headersFrom',
      'spec.declarative.subagents[0].agent.headers: headers is sent to agents served elsewhere: add url, or remove headers',
      'spec.declarative.subagents[1].agent.headers.Authorization: header Authorization carries a credential, which is never written in a manifest: move it to headersFrom: [{ name: Authorization, valueFrom: { type: Secret, name: <the Secret>, key: AUTHORIZATION } }]',
      'spec.apiKeySecretKey: apiKeySecretKey holds what looks like the secret itself: put the secret in an environment variable and write its name here, e.g. apiKeySecretKey: OPENAI_API_KEY',
    ]);
    // --no-env: the server's missing variable is a warning.
    expect(warnings.map((w) => `${w.path}: ${w.message}`)).toEqual([
      'spec.headersFrom[0].valueFrom.key: the environment has no variable SERVER_AUTH (a valueFrom is read from the variable its key names): set it',
    ]);
  });
});

describe('validate --no-env (missingEnv: warning)', () => {
  it("warns about a ModelConfig's missing key and still builds the app, its model with a stand-in key", async () => {
    const files = {
      'agent.yaml': `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata: { name: boss }
spec: { declarative: { systemMessage: hi, modelConfig: m } }
`,
      'model.yaml': `apiVersion: kagent.dev/v1alpha2
kind: ModelConfig
metadata: { name: m }
spec: { provider: OpenAI, model: gpt-4.1, apiKeySecret: k, apiKeySecretKey: AGENTLOOM_TEST_UNSET_KEY }
`,
    };
    const warned = await check(files, { env: {}, missingEnv: 'warning' });
    expect(warned.problems).toEqual([]);
    expect(warned.apps.map((a) => a.name)).toEqual(['boss']);
    expect(warned.warnings.map((w) => `${w.line}:${w.col}: ${w.path}: ${w.message}`)).toEqual([
      '4:77: spec.apiKeySecretKey: the environment has no variable AGENTLOOM_TEST_UNSET_KEY (the key of Secret k is read from the environment variable apiKeySecretKey names): set it',
    ]);
    const refused = await check(files, { env: {} });
    expect(refused.apps).toEqual([]);
    expect(refused.warnings).toEqual([]);
    expect(refused.problems.map((p) => p.path)).toEqual(['spec.apiKeySecretKey']);
  });
});
