/**
 * Reading one native document into agent specs: every agent (top level or inline) is validated with its type's
 * zod schema, and its sub-agents and tool entries are read one by one, so every problem of the document is
 * collected with its exact YAML path. Nothing is constructed here (see native-apps.ts).
 */
import type * as z from 'zod';
import { dirname, resolve } from 'node:path';
import type { ToolAuth } from '../../../tools/auth.js';
import type { McpToolsetOptions } from '../../../tools/mcp/mcp-toolset.js';
import type { SecretEnv } from '../shared/secret-refs.js';
import { zodFromJsonSchema } from '../shared/json-schema.js';
import {
  AGENT_SCHEMAS,
  AGENT_TYPES,
  agentToolSchema,
  mcpToolSchema,
  namedToolSchema,
  type AgentType,
  type LlmAgentData,
  type RemoteAgentData,
  type WorkflowAgentData,
} from './native-schema.js';
import { modelProblem, registeredTool, toolProblem, type Registries } from '../shared/registries.js';
import { readSecretMap, readToolAuth, type SecretContext } from './native-secrets.js';
import {
  closest,
  suggest,
  type ConfigProblem,
  type YamlDocument,
  type YamlPath,
} from '../shared/yaml-source.js';

/** A reference to an agent by name, where it was written. */
export interface AgentRef {
  ref: string;
  path: YamlPath;
}

/** A tool entry: a tool name, or an agent offered as a tool. */
export type ToolSpec =
  | { kind: 'name'; name: string; path: YamlPath; auth?: ToolAuth }
  | { kind: 'mcp'; options: McpToolsetOptions; path: YamlPath }
  | { kind: 'agent'; agent: AgentSpec | AgentRef; skipSummarization?: boolean; path: YamlPath };

/** A validated agent definition, not yet constructed. */
export interface AgentSpec {
  name: string;
  type: AgentType;
  /** Path of the definition's mapping. */
  path: YamlPath;
  data: LlmAgentData | WorkflowAgentData | RemoteAgentData;
  subAgents: (AgentSpec | AgentRef)[];
  tools: ToolSpec[];
  outputSchema?: z.ZodType;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads agent definitions of one document, collecting specs by name and every problem. */
export class SpecReader {
  readonly problems: ConfigProblem[] = [];
  /** Every valid definition by name, top level and inline. */
  readonly specs = new Map<string, AgentSpec>();
  /** Names of definitions that have problems: references to them are not reported again. */
  readonly invalidNames = new Set<string>();
  /** Definitions that are inline in another agent (they have that agent as parent). */
  readonly inlineParent = new Map<AgentSpec, AgentSpec>();
  /** Where each name was first defined (valid or not). */
  readonly defined = new Map<string, YamlPath>();
  /** Every reference by name, from valid and invalid definitions alike. */
  readonly references: { entry: AgentRef; owner: string | undefined; child: boolean }[] = [];

  constructor(
    readonly source: YamlDocument,
    private readonly registries: Registries,
    private readonly secrets: SecretEnv,
  ) {}

  /** Where secrets are read for this document. */
  private get secretContext(): SecretContext {
    return { source: this.source, problems: this.problems, secrets: this.secrets };
  }

  /** Records a problem at `path` of this document (at its key with `key: true`). */
  report(path: YamlPath, message: string, options: { key?: boolean } = {}): void {
    this.problems.push(this.source.problem(path, message, options));
  }

  /** Reads an agent definition at `path`; undefined (after reporting) when it is not one. */
  readAgent(value: unknown, path: YamlPath): AgentSpec | undefined {
    if (!isRecord(value)) {
      this.report(
        path,
        'write an agent definition, e.g. { name: writer, type: LlmAgent, model: gemini-2.5-flash }',
      );
      return undefined;
    }
    const before = this.problems.length;
    const name = typeof value.name === 'string' ? value.name : undefined;
    if (name !== undefined) this.define(name, path);
    const type = value.type ?? 'LlmAgent';
    const known = typeof type === 'string' && (AGENT_TYPES as readonly string[]).includes(type);
    if (!known) {
      this.report(
        [...path, 'type'],
        `unknown agent type "${String(type)}"; ${suggest(String(type), AGENT_TYPES, 'one of')}`,
      );
    }
    const parsed = known ? AGENT_SCHEMAS[type as AgentType].safeParse(value) : undefined;
    if (parsed && !parsed.success) {
      this.problems.push(
        ...this.source.zodProblems(path, AGENT_SCHEMAS[type as AgentType], parsed.error, String(type)),
      );
    }
    let outputSchema: z.ZodType | undefined;
    if (type === 'LlmAgent') {
      // A missing model next to a misspelt `model:` key is one problem, reported as the unknown key.
      const misspelt = Object.keys(value).some(
        (key) => key !== 'model' && closest(key, ['model']) === 'model',
      );
      if ((value.model === undefined && !misspelt) || typeof value.model === 'string') {
        const problem = modelProblem(value.model, this.registries);
        if (problem) this.report(value.model === undefined ? path : [...path, 'model'], problem);
      }
      if (isRecord(value.outputSchema)) {
        const at = [...path, 'outputSchema'];
        outputSchema = zodFromJsonSchema(value.outputSchema, at, (p, m) => this.report(p, m));
      }
    }
    const valid = parsed?.success === true && this.problems.length === before;
    // Sub-agents and tools are read even when the agent itself is invalid, so their problems show too.
    const subAgents = this.readSubAgents(value.subAgents, [...path, 'subAgents'], name);
    const tools = type === 'LlmAgent' ? this.readTools(value.tools, [...path, 'tools'], name) : [];
    if (!parsed?.success || !valid) {
      if (name !== undefined) this.invalidNames.add(name);
      return undefined;
    }
    let data = parsed.data as LlmAgentData | WorkflowAgentData | RemoteAgentData;
    if (type === 'RemoteA2aAgent' && 'headers' in data && data.headers) {
      const headers = readSecretMap(this.secretContext, data.headers, [...path, 'headers'], 'header');
      if (!headers) {
        if (name !== undefined) this.invalidNames.add(name);
        return undefined;
      }
      data = { ...data, headers };
    }
    const spec: AgentSpec = { name: data.name, type: type as AgentType, path, data, subAgents, tools };
    if (outputSchema) spec.outputSchema = outputSchema;
    this.specs.set(spec.name, spec);
    for (const child of subAgents) if ('type' in child) this.inlineParent.set(child, spec);
    return spec;
  }

  /** Records where `name` is defined; a second definition is a problem. */
  private define(name: string, path: YamlPath): void {
    const first = this.defined.get(name);
    if (!first) {
      this.defined.set(name, path);
      return;
    }
    const { line } = this.source.position(first);
    this.report(
      [...path, 'name'],
      `agent "${name}" is already defined at line ${line}; names are unique in an app, rename one`,
    );
  }

  private refer(entry: AgentRef, owner: string | undefined, child: boolean): AgentRef {
    this.references.push({ entry, owner, child });
    return entry;
  }

  private readSubAgents(value: unknown, path: YamlPath, owner: string | undefined): (AgentSpec | AgentRef)[] {
    if (!Array.isArray(value)) return [];
    return value.flatMap((entry, i): (AgentSpec | AgentRef)[] => {
      const at = [...path, i];
      if (typeof entry === 'string') return [this.refer({ ref: entry, path: at }, owner, true)];
      if (isRecord(entry)) {
        const spec = this.readAgent(entry, at);
        return spec ? [spec] : [];
      }
      this.report(at, 'write the name of an agent of this app, or an inline definition { name: …, type: … }');
      return [];
    });
  }

  private readTools(value: unknown, path: YamlPath, owner: string | undefined): ToolSpec[] {
    if (!Array.isArray(value)) return [];
    const seen = new Set<string>();
    return value.flatMap((entry, i): ToolSpec[] => {
      const at = [...path, i];
      const target = isRecord(entry) ? entry.agent : undefined;
      const toolName =
        typeof entry === 'string'
          ? entry
          : isRecord(entry) && typeof entry.tool === 'string'
            ? entry.tool
            : typeof target === 'string'
              ? target
              : isRecord(target)
                ? target.name
                : undefined;
      if (typeof toolName === 'string') {
        if (seen.has(toolName)) this.report(at, `tool "${toolName}" is listed twice; remove one`);
        seen.add(toolName);
      }
      if (typeof entry === 'string') {
        const problem = toolProblem(entry, this.registries);
        if (problem) this.report(at, problem);
        return problem ? [] : [{ kind: 'name', name: entry, path: at }];
      }
      if (!isRecord(entry)) {
        this.report(
          at,
          'write a tool name (e.g. exit_loop), { tool: <name>, auth: … }, { agent: <agent name or inline definition> } or { mcp: { url | command } }',
        );
        return [];
      }
      if ('mcp' in entry) return this.readMcp(entry, at);
      if ('tool' in entry) return this.readNamedTool(entry, at);
      const parsed = agentToolSchema.safeParse(entry);
      if (!parsed.success) {
        this.problems.push(...this.source.zodProblems(at, agentToolSchema, parsed.error, 'an agent tool'));
        return [];
      }
      const agent =
        typeof target === 'string'
          ? this.refer({ ref: target, path: [...at, 'agent'] }, owner, false)
          : this.readAgent(target, [...at, 'agent']);
      if (!agent) return [];
      return [{ kind: 'agent', agent, skipSummarization: parsed.data.skipSummarization, path: at }];
    });
  }

  /** An `mcp:` entry as McpToolset options (a stdio server runs in the YAML file's folder by default). */
  private readMcp(entry: Record<string, unknown>, at: YamlPath): ToolSpec[] {
    const parsed = mcpToolSchema.safeParse(entry);
    if (!parsed.success) {
      this.problems.push(...this.source.zodProblems(at, mcpToolSchema, parsed.error, 'an MCP server'));
      return [];
    }
    const { url, transport, command, args, cwd, auth: rawAuth, ...rest } = parsed.data.mcp;
    const { headers: rawHeaders, env: rawEnv, ...others } = rest;
    const ctx = this.secretContext;
    const before = this.problems.length;
    const headers = readSecretMap(ctx, rawHeaders, [...at, 'mcp', 'headers'], 'header');
    const env = readSecretMap(ctx, rawEnv, [...at, 'mcp', 'env'], 'variable');
    const auth = rawAuth === undefined ? undefined : readToolAuth(ctx, rawAuth, [...at, 'mcp', 'auth']);
    if (this.problems.length > before) return [];
    const folder = dirname(resolve(this.source.file));
    const connection =
      url !== undefined
        ? { url, ...(transport ? { transport } : {}), ...(headers ? { headers } : {}) }
        : {
            command: command as string,
            ...(args ? { args } : {}),
            ...(env ? { env } : {}),
            cwd: cwd === undefined ? folder : resolve(folder, cwd),
          };
    const options = Object.fromEntries(Object.entries(others).filter(([, v]) => v !== undefined));
    return [{ kind: 'mcp', options: { connection, ...options, ...(auth ? { auth } : {}) }, path: at }];
  }

  /** `{ tool: <name>, auth? }`: a registered (or built-in) tool, with the credential it needs. */
  private readNamedTool(entry: Record<string, unknown>, at: YamlPath): ToolSpec[] {
    const parsed = namedToolSchema.safeParse(entry);
    if (!parsed.success) {
      this.problems.push(...this.source.zodProblems(at, namedToolSchema, parsed.error, 'a tool entry'));
      return [];
    }
    const { tool: name, auth: rawAuth } = parsed.data;
    const problem = toolProblem(name, this.registries);
    if (problem) {
      this.report([...at, 'tool'], problem);
      return [];
    }
    if (rawAuth === undefined) return [{ kind: 'name', name, path: at }];
    if (registeredTool(name, this.registries)?.auth) {
      this.report(
        [...at, 'auth'],
        `tool "${name}" declares auth in code already: remove auth: here, or remove it from the tool's code`,
      );
      return [];
    }
    const auth = readToolAuth(this.secretContext, rawAuth, [...at, 'auth']);
    return auth ? [{ kind: 'name', name, path: at, auth }] : [];
  }
}
