/**
 * kagent `Agent` manifests → one app (CONTRACT.md "Declarative agents", reference 001).
 *
 * - Each Agent becomes an LlmAgent: `systemMessage` is its instruction, `spec.description` its description,
 *   `modelConfig` names its model (a registered model, a Gemini id, or a Gemini ModelConfig manifest of the same
 *   path, see kagent-model-configs.ts; absent: the model registered as "default").
 * - Its name is `metadata.name` made a JS identifier by {@link toIdentifier} (`code-writer` → `code_writer`).
 * - `subagents[].workflow` becomes a SequentialAgent / ParallelAgent / LoopAgent over the named Agents, offered to
 *   its parent as an AgentTool with `skipSummarization` (as kagent does). It is named
 *   `<parent>_<role>_<sequential|parallel|loop>` (role made an identifier, lower case) or, without a role,
 *   `<parent>_<index in subagents>_<type>`.
 * - `subagents[].agent` and `tools[]` of `type: Agent` offer that one Agent as an AgentTool; `tools[]` of
 *   `type: McpServer` offer the `toolNames` of the RemoteMCPServer or MCPServer manifest of that name in the path
 *   (an McpToolset; `requireApproval` tools ask a human first, see kagent-mcp-servers.ts). Without such a
 *   manifest, `toolNames` name tools registered in code.
 * - The root is the Agent annotated `agentloom.dev/root: "true"`, else the one Agent no other references. The
 *   app is named by the root's `agentloom.dev/app` annotation, else by its `metadata.name`.
 */
import type { BaseAgent } from '../../../agents/base-agent.js';
import { LlmAgent } from '../../../agents/llm/llm-agent.js';
import { LoopAgent } from '../../../agents/workflow/loop-agent.js';
import { ParallelAgent } from '../../../agents/workflow/parallel-agent.js';
import { SequentialAgent } from '../../../agents/workflow/sequential-agent.js';
import { RemoteA2aAgent } from '../../../agents/remote/remote-a2a-agent.js';
import { AgentloomError } from '../../../core/errors.js';
import { AgentTool } from '../../../agents/agent-tool.js';
import { McpToolset } from '../../../tools/mcp/mcp-toolset.js';
import type { Tool } from '../../../tools/tool.js';
import type { Model } from '../../../models/model.js';
import type { Toolset } from '../../../tools/toolset.js';
import { McpServers } from './kagent-mcp-servers.js';
import { readManifestHeaders, type ManifestHeaders } from './kagent-value-refs.js';
import { SecretEnv } from '../shared/secret-refs.js';
import { linkManifests, type InvalidManifest, type Manifest, type ManifestLinks } from './kagent-links.js';
import { ModelConfigs } from './kagent-model-configs.js';
import {
  APP_ANNOTATION,
  kagentAgentSchema,
  type KagentAgentReference,
  type KagentSubagent,
} from './kagent-schema.js';
import { toIdentifier } from '../native/native-schema.js';
import { modelProblem, toolProblem, type DeclarativeApp, type Registries } from '../shared/registries.js';
import type { ConfigProblem, YamlDocument, YamlPath } from '../shared/yaml-source.js';

const SUBAGENTS: YamlPath = ['spec', 'declarative', 'subagents'];

/** The name of the workflow agent of `subagents[index]` of `owner`. */
export function workflowAgentName(owner: string, subagent: KagentSubagent, index: number): string {
  const type = subagent.workflow?.type.toLowerCase() ?? 'workflow';
  const role = subagent.role ? toIdentifier(subagent.role.trim().toLowerCase()) : String(index);
  return `${toIdentifier(owner)}_${role}_${type}`;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** Model and tool names of a manifest (read from its raw data, so a manifest with other problems is checked too). */
function checkNames(
  source: YamlDocument,
  data: unknown,
  registries: Registries,
  modelConfigs: ModelConfigs,
  mcpServers: McpServers,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const declarativePath = ['spec', 'declarative'];
  const declarative = field(field(data, 'spec'), 'declarative');
  if (declarative === undefined) return problems;
  const modelConfig = field(declarative, 'modelConfig');
  if (modelConfig === undefined || typeof modelConfig === 'string') {
    const registered = modelConfig !== undefined && Object.hasOwn(registries.models ?? {}, modelConfig);
    const problem = registered
      ? undefined
      : modelProblem(modelConfig, registries, 'modelConfig', modelConfigs.names());
    const at = modelConfig === undefined ? declarativePath : [...declarativePath, 'modelConfig'];
    if (problem) problems.push(source.problem(at, problem));
  }
  const tools = field(declarative, 'tools');
  (Array.isArray(tools) ? tools : []).forEach((tool, i) => {
    const server = field(tool, 'mcpServer');
    const serverName = field(server, 'name');
    const kind = field(server, 'kind');
    // Tools of a server manifest of the path are the server's: what it lists is known when it is asked.
    if (
      typeof serverName === 'string' &&
      mcpServers.find(serverName, typeof kind === 'string' ? kind : undefined)
    )
      return;
    const names = field(server, 'toolNames');
    (Array.isArray(names) ? names : []).forEach((name, j) => {
      if (typeof name !== 'string') return;
      const problem = toolProblem(name, registries);
      if (problem) {
        const servers = mcpServers.names();
        const hint = ` (or add a RemoteMCPServer or MCPServer manifest named "${String(serverName)}"${
          servers.length > 0 ? `; the path has ${servers.join(', ')}` : ''
        })`;
        problems.push(
          source.problem([...declarativePath, 'tools', i, 'mcpServer', 'toolNames', j], `${problem}${hint}`),
        );
      }
    });
  });
  return problems;
}

/** Constructs the checked manifests, each Agent once. */
class Builder {
  private readonly built = new Map<string, BaseAgent>();

  constructor(
    private readonly links: ManifestLinks,
    /** The model an Agent's `modelConfig` builds with. */
    private readonly modelFor: (modelConfig: string) => Model | string,
    private readonly mcpServers: McpServers,
    /** Headers read from the environment, by tool entry and agent reference (kagent-value-refs.ts). */
    private readonly headers: ManifestHeaders,
  ) {}

  build(manifest: Manifest): BaseAgent {
    const existing = this.built.get(manifest.data.metadata.name);
    if (existing) return existing;
    const { spec } = manifest.data;
    const target = (name: string): BaseAgent => this.build(this.links.target(name));
    // An agent served elsewhere (reference 001's SubagentConfig with url): a RemoteA2aAgent; else an Agent here.
    const reference = (ref: KagentAgentReference): BaseAgent =>
      ref.url === undefined
        ? target(ref.name)
        : new RemoteA2aAgent({
            name: toIdentifier(ref.name),
            agentCard: ref.url,
            ...(ref.description !== undefined ? { description: ref.description } : {}),
            ...(this.headers.has(ref) ? { headers: this.headers.get(ref) } : {}),
            // kagent's timeout is in seconds (an httpx timeout).
            ...(ref.timeout !== undefined ? { timeoutMs: ref.timeout * 1000 } : {}),
          });
    const tools: (Tool | Toolset | string)[] = [];
    for (const tool of spec.declarative.tools ?? []) {
      const ref = tool.mcpServer;
      const server = ref && this.mcpServers.find(ref.name, ref.kind);
      if (ref && server?.options) {
        const { connection } = server.options;
        const extra = this.headers.get(tool);
        tools.push(
          new McpToolset({
            ...server.options,
            // The tool's headersFrom override the server's headers of the same name (as in kagent).
            ...(extra && 'url' in connection
              ? { connection: { ...connection, headers: { ...connection.headers, ...extra } } }
              : {}),
            name: ref.name,
            toolFilter: ref.toolNames,
            ...(ref.requireApproval ? { requireConfirmation: ref.requireApproval } : {}),
          }),
        );
      } else if (ref) tools.push(...ref.toolNames);
      if (tool.type === 'Agent' && tool.agent) tools.push(new AgentTool({ agent: target(tool.agent.name) }));
    }
    (spec.declarative.subagents ?? []).forEach((subagent, index) => {
      if (subagent.agent) tools.push(new AgentTool({ agent: reference(subagent.agent) }));
      const workflow = subagent.workflow;
      if (!workflow) return;
      const options = {
        name: workflowAgentName(manifest.data.metadata.name, subagent, index),
        description:
          subagent.description ??
          subagent.role ??
          `Runs ${workflow.agents.map((a) => a.name).join(', ')} (${workflow.type.toLowerCase()})`,
        subAgents: workflow.agents.map(reference),
      };
      const agent =
        workflow.type === 'Sequential'
          ? new SequentialAgent(options)
          : workflow.type === 'Parallel'
            ? new ParallelAgent(options)
            : new LoopAgent({ ...options, maxIterations: workflow.loopConfig?.maxIterations ?? 5 });
      tools.push(new AgentTool({ agent, skipSummarization: true }));
    });
    const agent = new LlmAgent({
      name: manifest.ident,
      // A workflow step's description (its role in the workflow) wins over the Agent's own.
      description: this.links.stepDescription(manifest.data.metadata.name) ?? spec.description,
      instruction: spec.declarative.systemMessage,
      ...(spec.declarative.modelConfig === undefined
        ? {}
        : { model: this.modelFor(spec.declarative.modelConfig) }),
      ...(spec.declarative.stream === undefined ? {} : { stream: spec.declarative.stream }),
      ...(tools.length > 0 ? { tools } : {}),
    });
    this.built.set(manifest.data.metadata.name, agent);
    return agent;
  }
}

/**
 * The app of a set of kagent Agent manifests (a file, or every manifest of a folder), or the problems that
 * stop it from being one (then `app` is undefined). `modelConfigs`: the ModelConfig manifests read with them.
 */
export function readKagentApp(
  sources: readonly YamlDocument[],
  registries: Registries,
  where: string,
  modelConfigs: ModelConfigs = ModelConfigs.none,
  mcpServers: McpServers = McpServers.none,
  secrets: SecretEnv = new SecretEnv(),
): { app?: DeclarativeApp; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [...modelConfigs.problems(), ...mcpServers.problems()];
  const manifests: Manifest[] = [];
  const invalid: InvalidManifest[] = [];
  for (const source of sources) {
    const data = source.data();
    const parsed = kagentAgentSchema.safeParse(data);
    if (!parsed.success) {
      problems.push(...source.zodProblems([], kagentAgentSchema, parsed.error, 'the Agent'));
      const name = (data as { metadata?: { name?: unknown } }).metadata?.name;
      invalid.push({ source, name: typeof name === 'string' ? name : undefined, data });
      continue;
    }
    const report: Manifest['report'] = (path, message, options) => {
      problems.push(source.problem(path, message, options));
    };
    manifests.push({ source, data: parsed.data, ident: toIdentifier(parsed.data.metadata.name), report });
  }
  const headers: ManifestHeaders = new Map();
  const remote = (name: string, kind: string | undefined) => {
    const found = mcpServers.find(name, kind);
    return found ? found.kind === 'RemoteMCPServer' : undefined;
  };
  for (const { source, data } of manifests)
    readManifestHeaders({ source, problems, secrets }, data.spec.declarative, remote, headers);
  const links = linkManifests(manifests, invalid, where);
  problems.push(...links.problems);
  for (const { source, data } of [...manifests, ...invalid])
    problems.push(...checkNames(source, data, registries, modelConfigs, mcpServers));
  // Generated workflow agent names must not collide with Agents or with each other.
  const names = new Map(manifests.map((m) => [m.ident, `Agent "${m.data.metadata.name}"`]));
  for (const manifest of manifests) {
    manifest.data.spec.declarative.subagents?.forEach((subagent, index) => {
      if (!subagent.workflow) return;
      const name = workflowAgentName(manifest.data.metadata.name, subagent, index);
      const taken = names.get(name);
      if (taken) {
        manifest.report(
          [...SUBAGENTS, index],
          `this workflow's agent would be named "${name}", as ${taken} is; give it another role: …`,
        );
      }
      names.set(name, `the workflow of ${manifest.data.metadata.name} subagents[${index}]`);
    });
  }
  const root = links.root;
  if (!root || problems.length > 0) return { problems };
  const appName = root.data.metadata.annotations?.[APP_ANNOTATION] ?? root.data.metadata.name;
  if (!/^[A-Za-z0-9_.-]+$/.test(appName)) {
    root.report(['metadata', 'annotations', APP_ANNOTATION], 'write an app name of letters, digits, _ . -');
    return { problems };
  }
  try {
    const builder = new Builder(
      links,
      (name) => modelConfigs.modelFor(name, registries),
      mcpServers,
      headers,
    );
    const namespace = root.data.metadata.namespace;
    return {
      app: { name: appName, agent: builder.build(root), ...(namespace ? { namespace } : {}) },
      problems: [],
    };
  } catch (err) {
    // The checks above mirror the constructors; this is the safety net for one they missed.
    if (!(err instanceof AgentloomError)) throw err;
    return { problems: [root.source.problem(['metadata', 'name'], err.message)] };
  }
}
