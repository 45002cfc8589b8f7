/** The apps an engine serves: each root agent, an index of every agent it can run, and its definition hash. */
import { createHash } from 'node:crypto';
import { BaseAgent } from '../agents/base-agent.js';
import { LlmAgent } from '../agents/llm-agent.js';
import { AgentloomError } from '../core/errors.js';
import type { Toolset } from '../tools/toolset.js';
import type { Tool } from '../tools/tool.js';

/** One app: a name and its root agent. */
export interface AppDefinition {
  name: string;
  agent: BaseAgent;
}

/** A registered app. */
export interface RegisteredApp {
  name: string;
  root: BaseAgent;
  /** Every agent runnable as a node: the tree, plus AgentTool agents (recursively). */
  agents: Map<string, BaseAgent>;
  /** Hash of the tree's structure; an invocation refuses to run on a different one. */
  definitionHash: string;
}

function indexAgents(root: BaseAgent, into: Map<string, BaseAgent>): void {
  for (const agent of root.descendants()) {
    const existing = into.get(agent.name);
    if (existing && existing !== agent) {
      throw new AgentloomError(
        'VALIDATION',
        `two different agents are named "${agent.name}" in one app; names must be unique`,
        {
          details: { agent: agent.name },
        },
      );
    }
    if (existing) continue;
    into.set(agent.name, agent);
    if (agent instanceof LlmAgent) for (const toolAgent of agent.toolAgents) indexAgents(toolAgent, into);
  }
}

/** Registers apps; throws VALIDATION on duplicate app names or invalid trees. */
export function registerApps(apps: readonly AppDefinition[]): Map<string, RegisteredApp> {
  const registry = new Map<string, RegisteredApp>();
  for (const app of apps) {
    if (typeof app?.name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(app.name)) {
      throw new AgentloomError(
        'VALIDATION',
        `app name "${String(app?.name)}" is not valid: use letters, digits, _ . -`,
        {
          details: { field: 'apps.name' },
        },
      );
    }
    if (!(app.agent instanceof BaseAgent)) {
      throw new AgentloomError('VALIDATION', `app "${app.name}": agent must be an agent instance`, {
        details: { field: 'apps.agent' },
      });
    }
    if (registry.has(app.name)) {
      throw new AgentloomError('VALIDATION', `app "${app.name}" is registered twice`, {
        details: { field: 'apps.name' },
      });
    }
    const agents = new Map<string, BaseAgent>();
    indexAgents(app.agent, agents);
    const definitionHash = createHash('sha256')
      .update(JSON.stringify(app.agent.definition()))
      .digest('hex')
      .slice(0, 32);
    registry.set(app.name, { name: app.name, root: app.agent, agents, definitionHash });
  }
  return registry;
}

/** The names of the tools that declare `auth`: the apps' agents' own and the registered ones. */
export function authToolsOf(apps: Iterable<RegisteredApp>, registered: Iterable<Tool>): string[] {
  const found = new Set<string>();
  for (const tool of registered) if (tool.auth) found.add(tool.name);
  for (const app of apps) {
    for (const agent of app.agents.values()) {
      if (!(agent instanceof LlmAgent)) continue;
      for (const tool of agent.toolInstances) if (tool.auth) found.add(tool.name);
    }
  }
  return [...found].sort();
}

/** The toolsets the apps' LLM agents hold (each once), to close with the engine. */
export function toolsetsOf(apps: Iterable<RegisteredApp>): Toolset[] {
  const found = new Set<Toolset>();
  for (const app of apps) {
    for (const agent of app.agents.values()) {
      if (agent instanceof LlmAgent) for (const toolset of agent.toolsets) found.add(toolset);
    }
  }
  return [...found];
}
