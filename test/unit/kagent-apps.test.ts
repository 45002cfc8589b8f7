/**
 * kagent Agent manifests (reference 001): an Agent becomes an LlmAgent, a workflow subagent becomes a workflow
 * agent over the named Agents offered to its parent as an AgentTool, names map `-` → `_`, and the proposal's
 * validation rules are reported at once with file:line:col.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkAppsYaml,
  formatProblem,
  loadAppsFromYaml,
  type Registries,
} from '../../src/config/apps/load-apps.js';
import {
  AgentTool,
  exitLoop,
  LlmAgent,
  LoopAgent,
  McpToolset,
  ParallelAgent,
  registerApps,
  RemoteA2aAgent,
  ScriptedModel,
  SequentialAgent,
} from '../../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'agentloom-kagent-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;

const model = new ScriptedModel({ respond: () => 'ok' });
const registries: Registries = {
  tools: { search: exitLoop },
  models: { fast: model, default: model, 'default-model-config': model },
};

/** A folder holding `files`. */
function folder(files: Record<string, string>): string {
  const dir = join(root, `f${folders++}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** An Agent manifest; `body` continues `spec.declarative` (after systemMessage on line 7, or 8 with `meta`). */
function agent(name: string, body = '', meta = ''): string {
  return `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata:
  name: ${name}${meta ? `\n  ${meta}` : ''}
spec:
  declarative:
    systemMessage: ${name} at work${body ? `\n${body}` : ''}
`;
}

async function problems(files: Record<string, string>): Promise<string[]> {
  const dir = folder(files);
  const result = await checkAppsYaml(dir, registries);
  if (result.problems.length > 0) expect(result.apps).toEqual([]);
  return result.problems.map((p) => formatProblem(p).replace(`${dir}/`, '').replaceAll(dir, 'D'));
}

describe('kagent manifests', () => {
  it('loads examples/kagent: the root offers its Sequential workflow as an AgentTool over the named Agents', async () => {
    const { apps } = await loadAppsFromYaml('examples/kagent', registries);
    expect(apps.map((a) => a.name)).toEqual(['code-development-pipeline']);
    const top = apps[0]?.agent as LlmAgent;
    expect(top).toBeInstanceOf(LlmAgent);
    expect(top.name).toBe('code_development_pipeline');
    expect(top.options).toMatchObject({
      instruction: 'Orchestrate code development: hand the request to the development pipeline.',
      model: 'default-model-config',
      description: 'Orchestrates the code development workflow',
    });
    const [tool] = top.options.tools as AgentTool[];
    expect(tool).toBeInstanceOf(AgentTool);
    const workflow = tool?.agent as SequentialAgent;
    expect(workflow).toBeInstanceOf(SequentialAgent);
    expect(workflow.name).toBe('code_development_pipeline_development_pipeline_sequential');
    expect(tool?.description).toBe('Sequential code development process');
    expect(workflow.subAgents.map((a) => a.name)).toEqual([
      'code_writer',
      'code_reviewer',
      'code_refactorer',
    ]);
    const writer = workflow.subAgents[0] as LlmAgent;
    expect(writer.options).toMatchObject({
      instruction: 'Write the code the user asks for, and save it as a note.',
      model: 'default-model-config',
      // The workflow's description of the step wins over the Agent's own.
      description: 'Generates initial code',
    });
    // Their MCP tools: the MCPServer `notes` (stdio, save_note approved by a human) and the RemoteMCPServer
    // `notes-http`.
    expect((writer.options.tools as McpToolset[]).map((t) => t.definition())).toEqual([
      {
        mcp: {
          name: 'notes',
          connection: { command: 'node', args: ['../mcp/notes-server.mjs', '--stdio'], env: [] },
          toolFilter: ['save_note', 'list_notes'],
          prefix: null,
          requireConfirmation: ['save_note'],
          idempotent: [],
          timeoutMs: 60_000,
        },
      },
    ]);
    const reviewer = workflow.subAgents[1] as LlmAgent;
    expect((reviewer.options.tools as McpToolset[]).map((t) => t.definition())).toMatchObject([
      {
        mcp: {
          name: 'notes-http',
          connection: { url: 'http://127.0.0.1:3001/mcp', transport: 'streamable-http', headers: [] },
          toolFilter: ['search_notes'],
          requireConfirmation: false,
          timeoutMs: 30_000,
        },
      },
    ]);
    // kagent offers workflows with skip_summarization: the workflow's answer ends the parent's turn.
    expect(tool?.declaration().name).toBe(workflow.name);
    expect(registerApps(apps).get('code-development-pipeline')?.agents.size).toBe(5);
    // The root Agent's namespace: the app's A2A path is /api/a2a/kagent/code-development-pipeline.
    expect(apps[0]?.namespace).toBe('kagent');
    expect(registerApps(apps).get('code-development-pipeline')?.namespace).toBe('kagent');
  });

  it('has the definition hash of the same tree written in code', async () => {
    const { apps } = await loadAppsFromYaml('examples/kagent', registries);
    const step = (name: string, instruction: string, description: string, tools?: McpToolset[]) =>
      new LlmAgent({
        name,
        instruction,
        description,
        model: 'default-model-config',
        ...(tools ? { tools } : {}),
      });
    const notes = new McpToolset({
      name: 'notes',
      connection: { command: 'node', args: ['../mcp/notes-server.mjs', '--stdio'], cwd: 'examples/kagent' },
      toolFilter: ['save_note', 'list_notes'],
      requireConfirmation: ['save_note'],
    });
    const notesHttp = new McpToolset({
      name: 'notes-http',
      connection: { url: 'http://127.0.0.1:3001/mcp' },
      toolFilter: ['search_notes'],
      timeoutMs: 30_000,
    });
    const code = new LlmAgent({
      name: 'code_development_pipeline',
      model: 'default-model-config',
      instruction: 'Orchestrate code development: hand the request to the development pipeline.',
      tools: [
        new AgentTool({
          skipSummarization: true,
          agent: new SequentialAgent({
            name: 'code_development_pipeline_development_pipeline_sequential',
            subAgents: [
              step(
                'code_writer',
                'Write the code the user asks for, and save it as a note.',
                'Generates initial code',
                [notes],
              ),
              step(
                'code_reviewer',
                'Review the code written so far and list its errors; search the notes for earlier reviews.',
                'Reviews code for errors',
                [notesHttp],
              ),
              step(
                'code_refactorer',
                'Refactor the code so that it addresses the review.',
                'Refactors based on review',
              ),
            ],
          }),
        }),
      ],
    });
    const hash = (agent: LlmAgent) =>
      registerApps([{ name: 'code-development-pipeline', agent }]).get('code-development-pipeline')
        ?.definitionHash;
    expect(hash(apps[0]?.agent as LlmAgent)).toBe(hash(code));
  });

  it('builds Loop (maxIterations, default 5) and Parallel workflows, agent references and tools', async () => {
    const dir = folder({
      'all.yaml': [
        agent(
          'boss',
          `    modelConfig: fast
    stream: true
    tools:
      - { type: McpServer, mcpServer: { name: tool-server, toolNames: [search, exit_loop] } }
      - { type: Agent, agent: { name: helper } }
    subagents:
      - { workflow: { type: Loop, agents: [{ name: writer }, { name: critic }], loopConfig: { maxIterations: 3 } } }
      - { role: Fan Out, workflow: { type: Parallel, agents: [{ name: web }, { name: docs }] } }
      - { workflow: { type: Loop, agents: [{ name: again }], loopConfig: {} } }
      - { agent: { name: reporter } }`,
        ),
        ...['helper', 'writer', 'critic', 'web', 'docs', 'again', 'reporter'].map((n) => agent(n)),
      ].join('---\n'),
    });
    const { apps } = await loadAppsFromYaml(dir, registries);
    const boss = apps[0]?.agent as LlmAgent;
    expect(boss.options).toMatchObject({ model: 'fast', stream: true });
    const tools = boss.options.tools as (AgentTool | string)[];
    expect(tools.slice(0, 2)).toEqual(['search', 'exit_loop']);
    const agents = tools.slice(2).map((t) => (t as AgentTool).agent);
    expect(agents.map((a) => [a.constructor, a.name])).toEqual([
      [LlmAgent, 'helper'],
      [LoopAgent, 'boss_0_loop'],
      [ParallelAgent, 'boss_fan_out_parallel'],
      [LoopAgent, 'boss_2_loop'],
      [LlmAgent, 'reporter'],
    ]);
    expect((agents[1] as LoopAgent).maxIterations).toBe(3);
    expect((agents[3] as LoopAgent).maxIterations).toBe(5);
    expect(agents[2]?.subAgents.map((a) => a.name)).toEqual(['web', 'docs']);
  });

  it('makes a subagent with url (reference 001 SubagentConfig) a RemoteA2aAgent: in a workflow and alone', async () => {
    const dir = folder({
      'all.yaml': [
        agent(
          'boss',
          `    subagents:
      - workflow:
          type: Sequential
          agents:
            - { name: writer }
            - { name: code-reviewer, url: 'http://code-reviewer.kagent:8080', headers: { x-team: a }, timeout: 30, description: reviews }
      - { agent: { name: far-away, url: 'https://agents.example.com/a2a/far' } }`,
        ),
        agent('writer'),
      ].join('---\n'),
    });
    const { apps, errors } = await loadAppsFromYaml(dir, registries);
    expect(errors ?? []).toEqual([]);
    const boss = apps[0]?.agent as LlmAgent;
    const [pipeline, alone] = (boss.options.tools as AgentTool[]).map((t) => t.agent);
    expect(pipeline?.subAgents.map((a) => [a.constructor, a.name])).toEqual([
      [LlmAgent, 'writer'],
      [RemoteA2aAgent, 'code_reviewer'],
    ]);
    expect(pipeline?.subAgents[1]).toMatchObject({
      agentCard: 'http://code-reviewer.kagent:8080',
      headers: { 'x-team': 'a' },
      timeoutMs: 30_000,
      description: 'reviews',
    });
    expect(alone).toBeInstanceOf(RemoteA2aAgent);
    expect(alone).toMatchObject({ name: 'far_away', agentCard: 'https://agents.example.com/a2a/far' });
    expect(
      await problems({
        'a.yaml': agent('boss', `    subagents:\n      - { agent: { name: x, url: 'ftp://x' } }`),
      }),
    ).toEqual([expect.stringContaining("write url as the remote agent's http(s) base URL")]);
  });

  it('reports the subagent rules of the proposal at once', async () => {
    expect(
      await problems({
        'root.yaml': `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata:
  name: boss
spec:
  declarative:
    systemMessage: Lead
    subagents:
      - agent: { name: helper }
        workflow: { type: Sequential, agents: [{ name: helper }] }
      - role: idle
      - workflow:
          type: Sequentail
          agents: [{ name: helper }]
      - workflow:
          type: Loop
          agents: [{ name: helper }]
      - workflow:
          type: Loop
          agents: [{ name: helper }]
          loopConfig: { maxIterations: 0 }
      - workflow:
          type: Parallel
          agents: []
`,
        'helper.yaml': agent('helper'),
      }),
    ).toEqual([
      'root.yaml:9:9: spec.declarative.subagents[0]: subagent must specify either agent or workflow, not both; move one into its own list entry',
      'root.yaml:11:9: spec.declarative.subagents[1]: subagent must specify either agent or workflow; add agent: { name: … } or workflow: { type: …, agents: […] }',
      'root.yaml:13:17: spec.declarative.subagents[2].workflow.type: workflow type must be Sequential, Parallel, or Loop; did you mean "Sequential"?',
      'root.yaml:16:11: spec.declarative.subagents[3].workflow.loopConfig: Loop workflow must specify loopConfig; write loopConfig: { maxIterations: 5 }',
      'root.yaml:21:40: spec.declarative.subagents[4].workflow.loopConfig.maxIterations: maxIterations must be at least 1; write e.g. maxIterations: 5',
      'root.yaml:24:19: spec.declarative.subagents[5].workflow.agents: a workflow needs at least one agent: add - name: <an Agent of this folder>',
    ]);
    expect(
      await problems({
        'a.yaml': agent(
          'boss',
          '    subagents: [{ workflow: { type: Loop, agents: [{ name: w }], loopConfig: { maxIterations: 101 } } }]',
        ),
        'w.yaml': agent('w'),
      }),
    ).toEqual([
      'a.yaml:8:95: spec.declarative.subagents[0].workflow.loopConfig.maxIterations: maxIterations must be at most 100; write e.g. maxIterations: 100',
    ]);
  });

  it('names a missing Agent, and checks modelConfig and MCP tool names against the registries', async () => {
    expect(
      await problems({
        'root.yaml': `apiVersion: kagent.dev/v1alpha2
kind: Agent
metadata:
  name: boss
spec:
  declarative:
    systemMessage: Lead
    modelConfig: slow-model
    tools:
      - type: McpServer
        mcpServer: { name: tools-server, toolNames: [search, serch] }
    subagents:
      - workflow:
          type: Sequential
          agents: [{ name: code-writter }, { name: code-reviewer }]
`,
        'agents.yaml': `${agent('code-writer')}---\n${agent('code-reviewer')}`,
      }),
    ).toEqual([
      'root.yaml:8:18: spec.declarative.modelConfig: unknown model "slow-model" (known: fast, default, default-model-config, provider ids such as gemini-2.5-flash, openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2); write modelConfig: <a provider id>, or register a model "slow-model" in code and name that module with validate --registry',
      'root.yaml:11:62: spec.declarative.tools[0].mcpServer.toolNames[1]: unknown tool "serch" (known: exit_loop, search); did you mean "search"? (or add a RemoteMCPServer or MCPServer manifest named "tools-server")',
      'root.yaml:15:28: spec.declarative.subagents[0].workflow.agents[0].name: no Agent named "code-writter" in D; did you mean "code-writer"? Or add a manifest with kind: Agent and metadata.name: code-writter',
    ]);
  });

  it('reads RemoteMCPServer and MCPServer manifests, and reports requireApproval outside toolNames and bad servers', async () => {
    expect(
      await problems({
        'root.yaml': `${agent(
          'boss',
          `    modelConfig: fast
    tools:
      - type: McpServer
        mcpServer: { kind: RemoteMCPServer, name: remote, toolNames: [a, b], requireApproval: [b, c] }
      - type: McpServer
        mcpServer: { kind: MCPServer, name: local, toolNames: [x] }`,
        )}`,
        'servers.yaml': `apiVersion: kagent.dev/v1alpha2
kind: RemoteMCPServer
metadata: { name: remote }
spec:
  url: not a url
  protocol: GRPC
  timeout: soon
  headersFrom:
    - { name: Authorization, valueFrom: { type: Secret, name: tokens, key: AGENTLOOM_TEST_UNSET_TOKEN } }
---
apiVersion: kagent.dev/v1alpha1
kind: MCPServer
metadata: { name: local }
spec:
  transportType: http
  deployment: { args: [1] }
`,
      }),
    ).toEqual([
      'root.yaml:11:99: spec.declarative.tools[0].mcpServer.requireApproval[1]: "c" is not in toolNames (a, b): requireApproval lists tools of toolNames',
      'servers.yaml:5:8: spec.url: write url: the server address, e.g. url: http://127.0.0.1:3001/mcp',
      'servers.yaml:6:13: spec.protocol: write protocol: STREAMABLE_HTTP or protocol: SSE',
      'servers.yaml:7:12: spec.timeout: write timeout as a duration, e.g. timeout: 30s',
      'servers.yaml:9:76: spec.headersFrom[0].valueFrom.key: the environment has no variable AGENTLOOM_TEST_UNSET_TOKEN (a valueFrom is read from the variable its key names): set it',
      'servers.yaml:15:18: spec.transportType: agentloom runs a kmcp MCPServer with transportType: stdio; for an HTTP server write a RemoteMCPServer with its url',
      'servers.yaml:16:15: spec.deployment.cmd: write deployment: { cmd: <command>, args: [...] }, e.g. cmd: npx',
      'servers.yaml:16:23: spec.deployment.args: write args as a list of text, e.g. args: [server.js]',
    ]);
  });

  it('reports unknown keys, the apiVersion, Kubernetes names and non-declarative agents', async () => {
    expect(
      await problems({
        'a.yaml': `apiVersion: kagent.dev/v1alpha1
kind: Agent
metadata:
  name: Bad_Name
spec:
  type: BYO
  declarative:
    systemMesage: hi
    modelConfig: fast
`,
      }),
    ).toEqual([
      'a.yaml:1:13: apiVersion: agentloom reads kagent.dev/v1alpha2 manifests; write apiVersion: kagent.dev/v1alpha2',
      'a.yaml:4:9: metadata.name: write a Kubernetes name (lowercase letters, digits, - and .), e.g. code-writer',
      'a.yaml:6:9: spec.type: agentloom loads Declarative agents only; write type: Declarative',
      'a.yaml:8:5: spec.declarative.systemMesage: unknown key "systemMesage" in declarative; did you mean "systemMessage"?',
    ]);
  });

  it('decides the root: the one unreferenced Agent, or the annotated one', async () => {
    const ambiguous = 'no other Agent references one, two, so the root is ambiguous; mark the root with';
    expect(await problems({ 'a.yaml': `${agent('one')}---\n${agent('two')}` })).toEqual([
      expect.stringContaining(`a.yaml:4:9: metadata.name: ${ambiguous}`),
      expect.stringContaining(`a.yaml:12:9: metadata.name: ${ambiguous}`),
    ]);
    const annotated = agent(
      'one',
      '',
      "annotations: { agentloom.dev/root: 'true', agentloom.dev/app: team }",
    );
    expect(await problems({ 'a.yaml': `${annotated}---\n${agent('two')}` })).toEqual([
      'a.yaml:13:9: metadata.name: Agent "two" is not used by the root Agent "one"; reference it from a subagent, or move it out of D',
    ]);
    const { apps } = await loadAppsFromYaml(folder({ 'a.yaml': annotated }), registries);
    expect(apps.map((a) => [a.name, a.agent.name])).toEqual([['team', 'one']]);
  });

  it('reports name collisions after mapping, a step in two workflows, and cycles', async () => {
    expect(
      await problems({
        'a.yaml': `${agent('a-b', '    subagents: [{ agent: { name: a.b } }]')}---\n${agent('a.b')}`,
      }),
    ).toEqual(['a.yaml:13:9: metadata.name: "a.b" and "a-b" both become agent name "a_b"; rename one']);
    const twice = `    subagents:
      - workflow: { type: Sequential, agents: [{ name: w }] }
      - workflow: { type: Parallel, agents: [{ name: w }] }`;
    expect(await problems({ 'a.yaml': `${agent('boss', twice)}---\n${agent('w')}` })).toEqual([
      'a.yaml:10:54: spec.declarative.subagents[1].workflow.agents[0].name: Agent "w" is already a step of a workflow of "boss"; an agent runs in one workflow only, copy its manifest under another name',
    ]);
    const boss = agent(
      'boss',
      '    subagents: [{ agent: { name: w } }]',
      "annotations: { agentloom.dev/root: 'true' }",
    );
    const w = agent('w', '    subagents: [{ agent: { name: boss } }]');
    expect(await problems({ 'a.yaml': `${boss}---\n${w}` })).toEqual([
      'a.yaml:18:34: spec.declarative.subagents[0].agent.name: Agent "boss" would contain itself (boss → w → boss); remove this reference',
    ]);
  });

  it('skips other kagent kinds and reports unknown ones', async () => {
    const other = 'apiVersion: kagent.dev/v1alpha2\nkind: Agnet\nmetadata: { name: x }\n';
    const model =
      'apiVersion: kagent.dev/v1alpha2\nkind: ModelConfig\nmetadata: { name: m }\nspec: { provider: Gemini, model: gemini-2.5-flash }\n';
    expect(await problems({ 'a.yaml': `${agent('boss')}---\n${model}---\n${other}` })).toEqual([
      'a.yaml:15:7: kind: agentloom reads kagent.dev manifests of kind Agent (and skips ModelConfig, RemoteMCPServer, MCPServer, ToolServer, Memory); did you mean "Agent"?',
    ]);
  });
});
