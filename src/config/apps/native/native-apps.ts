/**
 * agentloom's own YAML format → an app: the document is read into specs (native-spec.ts), the references
 * between agents are resolved and checked (one parent per agent, no cycles, every agent reachable from the root,
 * tools and models known), and only a document without problems is constructed into the same classes as code.
 */
import type { Budget } from '../../../models/budget/budget.js';
import type { BaseAgent } from '../../../agents/base-agent.js';
import { LlmAgent } from '../../../agents/llm/llm-agent.js';
import type { LlmAgentOptions } from '../../../agents/llm/llm-agent-options.js';
import { LoopAgent } from '../../../agents/workflow/loop-agent.js';
import { ParallelAgent } from '../../../agents/workflow/parallel-agent.js';
import { SequentialAgent } from '../../../agents/workflow/sequential-agent.js';
import { RemoteA2aAgent } from '../../../agents/remote/remote-a2a-agent.js';
import { AgentloomError } from '../../../core/errors.js';
import { AgentTool } from '../../../agents/agent-tool.js';
import { McpToolset } from '../../../tools/mcp/mcp-toolset.js';
import type { Tool } from '../../../tools/tool.js';
import { withAuth } from '../../../tools/tool-with-auth.js';
import type { Toolset } from '../../../tools/toolset.js';
import {
  appDocumentSchema,
  type LlmAgentData,
  type RemoteAgentData,
  type WorkflowAgentData,
} from './native-schema.js';
import { SpecReader, type AgentRef, type AgentSpec } from './native-spec.js';
import { registeredTool, type DeclarativeApp, type Registries } from '../shared/registries.js';
import type { SecretEnv } from '../shared/secret-refs.js';
import { suggest, type ConfigProblem, type YamlDocument } from '../shared/yaml-source.js';

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Resolves references of a read document and checks the tree; fills `reader.problems`. */
class Linker {
  /** Parent of each agent, by agent name. */
  private readonly parents = new Map<string, string>();
  /** References to agents that do not exist (an unused agent is then likely the misspelt target). */
  unresolved = 0;

  constructor(private readonly reader: SpecReader) {
    for (const [child, parent] of reader.inlineParent) this.parents.set(child.name, parent.name);
  }

  /** The spec a sub-agent entry or tool target stands for. */
  resolve(entry: AgentSpec | AgentRef): AgentSpec | undefined {
    return 'ref' in entry ? this.reader.specs.get(entry.ref) : entry;
  }

  linkReferences(): void {
    const { reader } = this;
    for (const { entry, owner, child } of reader.references) {
      const target = reader.specs.get(entry.ref);
      if (!target) {
        // A reference to a definition that has problems of its own is not reported again.
        if (reader.invalidNames.has(entry.ref)) continue;
        this.unresolved++;
        const near = suggest(entry.ref, [...reader.defined.keys()], 'one of');
        reader.report(
          entry.path,
          `no agent named "${entry.ref}" in this app; ${near.startsWith('did') ? `${near} Or ` : ''}define it under agents: or inline here`,
        );
        continue;
      }
      if (!child) continue;
      const parent = this.parents.get(target.name);
      if (parent) {
        reader.report(
          entry.path,
          `agent "${entry.ref}" is already a sub-agent of "${parent}"; an agent has one parent, define a separate agent for "${owner}"`,
        );
        continue;
      }
      if (owner !== undefined) this.parents.set(target.name, owner);
    }
  }

  /** The root spec: `root:` or else the one top-level agent nobody references. */
  findRoot(
    root: string | undefined,
    topLevel: readonly AgentSpec[],
    toolTargets: Set<string>,
  ): AgentSpec | undefined {
    const { reader } = this;
    // An agent with problems of its own is not in `specs`; the root is judged once every agent is valid.
    const judged = reader.invalidNames.size === 0;
    if (root !== undefined) {
      const spec = reader.specs.get(root);
      if (!spec && !reader.invalidNames.has(root)) {
        const names = [...reader.defined.keys()];
        reader.report(['root'], `no agent named "${root}"; ${suggest(root, names, 'one of')}`);
      } else if (spec && this.parents.has(root)) {
        const parent = this.parents.get(root);
        reader.report(
          ['root'],
          `root "${root}" is a sub-agent of "${parent}"; name the top agent of the tree`,
        );
      }
      return spec;
    }
    const candidates = topLevel.filter((s) => !this.parents.has(s.name) && !toolTargets.has(s.name));
    if (candidates.length === 1 && judged) return candidates[0];
    if (candidates.length > 1 || judged) {
      const names = candidates.map((c) => c.name).join(', ');
      reader.report(
        ['root'],
        `missing; write root: <name of the top agent>${names ? `, one of ${names}` : ''}`,
      );
    }
    return undefined;
  }

  /** Depth-first from the root: cycles and unreachable agents are problems. */
  checkTree(root: AgentSpec): Set<string> {
    const reached = new Set<string>();
    const stack: string[] = [];
    const visit = (spec: AgentSpec, via?: AgentRef): void => {
      if (stack.includes(spec.name)) {
        const cycle = [...stack.slice(stack.indexOf(spec.name)), spec.name].join(' → ');
        this.reader.report(
          via?.path ?? spec.path,
          `agent "${spec.name}" contains itself (${cycle}); remove this reference`,
        );
        return;
      }
      if (reached.has(spec.name)) return;
      reached.add(spec.name);
      stack.push(spec.name);
      const targets = [
        ...spec.subAgents,
        ...spec.tools.flatMap((t) => (t.kind === 'agent' ? [t.agent] : [])),
      ];
      for (const entry of targets) {
        const target = this.resolve(entry);
        if (target) visit(target, 'ref' in entry ? entry : undefined);
      }
      stack.pop();
    };
    visit(root);
    return reached;
  }
}

/** Constructs the agents of a checked document (each spec once). */
class Builder {
  private readonly built = new Map<string, BaseAgent>();

  constructor(
    private readonly linker: Linker,
    private readonly registries: Registries,
  ) {}

  build(spec: AgentSpec): BaseAgent {
    const existing = this.built.get(spec.name);
    if (existing) return existing;
    const child = (entry: AgentSpec | AgentRef): BaseAgent =>
      this.build(this.linker.resolve(entry) as AgentSpec);
    const subAgents = spec.subAgents.map(child);
    const base = {
      name: spec.name,
      description: spec.data.description,
      subAgents,
      maxStepMs: spec.data.maxStepMs,
      budget: spec.data.budget as Budget | undefined,
    };
    let agent: BaseAgent;
    if (spec.type === 'LlmAgent') {
      const {
        name: _n,
        type: _t,
        tools: _tools,
        subAgents: _s,
        outputSchema: _o,
        budget: _b,
        ...options
      } = spec.data as LlmAgentData;
      const tools: (Tool | Toolset | string)[] | undefined =
        _tools &&
        spec.tools.map((t) =>
          t.kind === 'name'
            ? t.auth
              ? withAuth(registeredTool(t.name, this.registries) as Tool, t.auth)
              : t.name
            : t.kind === 'mcp'
              ? new McpToolset(t.options)
              : new AgentTool({ agent: child(t.agent), skipSummarization: t.skipSummarization }),
        );
      agent = new LlmAgent(
        withoutUndefined<LlmAgentOptions>({
          ...base,
          // Absent in YAML → absent in the options, exactly as in a code tree that leaves them out.
          subAgents: _s && subAgents,
          ...options,
          tools,
          outputSchema: spec.outputSchema,
        }),
      );
    } else if (spec.type === 'RemoteA2aAgent') {
      // Headers as read by the spec reader: text, the secrets' values read from the environment.
      const { agentCard, timeoutMs, outputKey, sideEffects } = spec.data as RemoteAgentData;
      const headers = (spec.data as RemoteAgentData).headers as Record<string, string> | undefined;
      const { subAgents: _none, ...leaf } = base;
      agent = new RemoteA2aAgent(
        withoutUndefined({ ...leaf, agentCard, headers, timeoutMs, outputKey, sideEffects }),
      );
    } else if (spec.type === 'LoopAgent') {
      agent = new LoopAgent(
        withoutUndefined({ ...base, maxIterations: (spec.data as WorkflowAgentData).maxIterations ?? 5 }),
      );
    } else {
      agent =
        spec.type === 'SequentialAgent'
          ? new SequentialAgent(withoutUndefined(base))
          : new ParallelAgent(withoutUndefined(base));
    }
    this.built.set(spec.name, agent);
    return agent;
  }
}

/** One native document as an app, or the problems that stop it from being one (then `app` is undefined). */
export function readNativeApp(
  source: YamlDocument,
  registries: Registries,
  secrets: SecretEnv,
): { app?: DeclarativeApp; problems: ConfigProblem[] } {
  const reader = new SpecReader(source, registries, secrets);
  const data = source.data();
  const parsed = appDocumentSchema.safeParse(data);
  if (!parsed.success)
    reader.problems.push(...source.zodProblems([], appDocumentSchema, parsed.error, 'the app'));
  const raw =
    (typeof data === 'object' && data !== null ? (data as Record<string, unknown>).agents : undefined) ?? [];
  const topLevel = (Array.isArray(raw) ? raw : []).flatMap(
    (value, i) => reader.readAgent(value, ['agents', i]) ?? [],
  );
  if (!parsed.success) return { problems: reader.problems };
  const linker = new Linker(reader);
  linker.linkReferences();
  const toolTargets = new Set<string>();
  for (const spec of reader.specs.values()) {
    for (const tool of spec.tools) {
      const target = tool.kind === 'agent' ? linker.resolve(tool.agent) : undefined;
      if (target) toolTargets.add(target.name);
    }
  }
  const root = linker.findRoot(parsed.data.root, topLevel, toolTargets);
  if (root) {
    const reached = linker.checkTree(root);
    for (const spec of topLevel) {
      if (!reached.has(spec.name) && linker.unresolved === 0) {
        reader.report(
          spec.path,
          `agent "${spec.name}" is not used by root "${root.name}"; list it under subAgents or tools of an agent of the tree, or remove it`,
        );
      }
    }
  }
  if (!root || reader.problems.length > 0) return { problems: reader.problems };
  try {
    return {
      app: {
        name: parsed.data.app,
        agent: new Builder(linker, registries).build(root),
        ...(parsed.data.budget === undefined ? {} : { budget: parsed.data.budget as Budget }),
      },
      problems: [],
    };
  } catch (err) {
    // The checks above mirror the constructors; this is the safety net for one they missed.
    if (!(err instanceof AgentloomError)) throw err;
    return { problems: [source.problem(root.path, err.message)] };
  }
}
