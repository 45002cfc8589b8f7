/** The apps an engine serves: each root agent, an index of every agent it can run, and its definition hash. */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { BaseAgent } from '../../agents/base-agent.js';
import { LlmAgent } from '../../agents/llm/llm-agent.js';
import { AgentloomError } from '../../core/errors.js';
import { validateBudget, type Budget } from '../../models/budget/budget.js';
import type { Toolset } from '../../tools/toolset.js';
import type { Tool } from '../../tools/tool.js';
import { credentialKeyOf, type ToolAuth } from '../../tools/auth.js';

/** One app: a name and its root agent. */
export interface AppDefinition {
  name: string;
  agent: BaseAgent;
  /** The kagent namespace of an app loaded from kagent manifests (its A2A path `/api/a2a/{namespace}/{app}`). */
  namespace?: string;
  /** The budget of every run of the app (README "Budgets"); an invocation's own budget overrides it field by field. */
  budget?: Budget;
}

/** A registered app. */
export interface RegisteredApp {
  name: string;
  root: BaseAgent;
  /** Every agent runnable as a node: the tree, plus AgentTool agents (recursively). */
  agents: Map<string, BaseAgent>;
  /** Hash of the tree's structure; an invocation refuses to run on a different one. */
  definitionHash: string;
  /** The kagent namespace of an app loaded from kagent manifests; undefined for code and native YAML apps. */
  namespace?: string;
  /** The budget of every run of the app, checked. */
  budget?: Budget;
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
    registry.set(app.name, {
      name: app.name,
      root: app.agent,
      agents,
      definitionHash,
      ...(app.namespace ? { namespace: app.namespace } : {}),
      ...(app.budget === undefined
        ? {}
        : { budget: validateBudget(app.budget, `app "${app.name}": budget`) }),
    });
  }
  return registry;
}

/** A tool's (or toolset's) `auth`, with the app it is in (undefined: a tool registered by name, in every app). */
export interface DeclaredAuth {
  tool: string;
  app: string | undefined;
  auth: ToolAuth;
}

/** Every `auth` the apps' agents' tools and toolsets and the registered tools declare. */
export function declaredAuths(apps: Iterable<RegisteredApp>, registered: Iterable<Tool>): DeclaredAuth[] {
  const found: DeclaredAuth[] = [];
  for (const tool of registered)
    if (tool.auth) found.push({ tool: tool.name, app: undefined, auth: tool.auth });
  for (const app of apps) {
    for (const agent of app.agents.values()) {
      if (!(agent instanceof LlmAgent)) continue;
      for (const tool of [...agent.toolInstances, ...agent.toolsets]) {
        if (tool.auth) found.push({ tool: tool.name, app: app.name, auth: tool.auth });
      }
    }
  }
  return found;
}

/** The names of the tools that declare `auth`. */
export function authToolsOf(apps: Iterable<RegisteredApp>, registered: Iterable<Tool>): string[] {
  return [...new Set(declaredAuths(apps, registered).map((d) => d.tool))].sort();
}

/**
 * The declared config of a credential key in an app: where its token URL and client secret come from when a user
 * answers (never from the answer). Two tools of an app that share a key must declare the same config.
 */
export function authConfigFor(
  declared: readonly DeclaredAuth[],
  app: string,
  credentialKey: string,
): ToolAuth | undefined {
  return declared.find(
    (d) => (d.app === undefined || d.app === app) && credentialKeyOf(d.auth) === credentialKey,
  )?.auth;
}

/** Refuses two different configs under one credential key of an app (which one would a user's answer fit?). */
export function checkDeclaredAuths(declared: readonly DeclaredAuth[], apps: Iterable<RegisteredApp>): void {
  for (const app of apps) {
    const byKey = new Map<string, DeclaredAuth>();
    for (const d of declared) {
      if (d.app !== undefined && d.app !== app.name) continue;
      const key = credentialKeyOf(d.auth);
      const first = byKey.get(key);
      if (!first) byKey.set(key, d);
      else if (!isDeepStrictEqual(first.auth, d.auth)) {
        throw new AgentloomError(
          'CONFIG',
          `app "${app.name}": tools "${first.tool}" and "${d.tool}" declare different auth under one credentialKey "${key}"; give each its own credentialKey, or declare the same config`,
          { details: { field: 'auth.credentialKey' } },
        );
      }
    }
  }
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

/**
 * Refuses (DEFINITION_MISMATCH) to act on `inv` from an engine whose apps define it otherwise: answering or retrying
 * it would resume it against checkpoints of a different workflow.
 */
export function assertSameDefinition(
  apps: ReadonlyMap<string, RegisteredApp>,
  inv: { id: string; app: string; definitionHash: string } | undefined,
): void {
  if (!inv) return;
  const app = apps.get(inv.app);
  if (!app || app.definitionHash !== inv.definitionHash) {
    throw new AgentloomError(
      'DEFINITION_MISMATCH',
      `invocation ${inv.id} was started with another definition of app "${inv.app}"; answer it from an engine that serves that definition (changing the agent tree under a running invocation would resume it against checkpoints of a different workflow)`,
      {
        details: {
          invocationId: inv.id,
          expected: inv.definitionHash,
          actual: app?.definitionHash ?? null,
        },
      },
    );
  }
}
