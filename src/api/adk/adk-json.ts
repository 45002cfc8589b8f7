/**
 * agentloom's data in the shapes of ADK's API server (adk-python 2.5, camelCase): events (times in seconds, the
 * node path as `nodeInfo.path`, token usage as `usageMetadata`, only the keys of ADK's event model), sessions, and
 * an app's agent tree as `build_graph` serializes it (snake_case keys, as ADK's dev UI reads them) and as a Graphviz
 * graph.
 */
import type { BaseAgent } from '../../agents/base-agent.js';
import type { Event, EventActions } from '../../core/event.js';
import type { SessionRecord } from '../../store/repos/sessions.js';
import {
  ADK_EVENT_ACTIONS_KEYS,
  ADK_EVENT_KEYS,
  ADK_TOOL_CONFIRMATION_KEYS,
  ADK_USAGE_METADATA_KEYS,
  pickKeys,
} from './adk-event-model.js';

/** Token usage as google-genai's `GenerateContentResponseUsageMetadata` names it. */
export interface AdkUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  totalTokenCount?: number;
  cachedContentTokenCount?: number;
}

/** The actions of an event in ADK's `EventActions` keys. */
export type AdkEventActions = Partial<
  Pick<
    EventActions,
    | 'stateDelta'
    | 'artifactDelta'
    | 'transferToAgent'
    | 'escalate'
    | 'skipSummarization'
    | 'agentState'
    | 'endOfAgent'
    | 'requestedToolConfirmations'
  >
>;

/** An event as ADK's API server sends it. */
export type AdkEvent = Pick<
  Event,
  | 'id'
  | 'invocationId'
  | 'author'
  | 'branch'
  | 'content'
  | 'partial'
  | 'errorCode'
  | 'errorMessage'
  | 'longRunningToolIds'
> & {
  timestamp: number;
  actions: AdkEventActions;
  nodeInfo: { path: string };
  usageMetadata?: AdkUsageMetadata;
};

/**
 * A node path as adk-python 2.5 writes it: every segment `name@run`, the run counted from 1. Ours marks a loop's
 * iteration k as `name#k` (from 0) and a node that runs once by its name alone. The dev UI draws a node's runs from
 * these, and a `#` in a name breaks the Graphviz text it builds.
 */
export function adkNodePath(nodePath: string): string {
  if (nodePath === '') return '';
  return nodePath
    .split('/')
    .map((segment) => {
      const loop = /^(.*)#(\d+)$/.exec(segment);
      return loop ? `${loop[1]}@${Number(loop[2]) + 1}` : `${segment}@1`;
    })
    .join('/');
}

/** A model call's token usage in google-genai's `usageMetadata` keys (as the Gemini provider reads them). */
function adkUsageMetadata(usage: NonNullable<EventActions['usage']>): AdkUsageMetadata {
  return pickKeys(
    {
      promptTokenCount: usage.promptTokens,
      candidatesTokenCount: usage.outputTokens,
      totalTokenCount: usage.totalTokens,
      cachedContentTokenCount: usage.cachedTokens,
    },
    ADK_USAGE_METADATA_KEYS,
  );
}

/**
 * An event in ADK's shape: only the keys of ADK's `Event` and `EventActions` pass, whatever else ours carries
 * (`seq`, the model request digest, list appends, ...); those stay on `/v1`.
 */
export function adkEvent(event: Event): AdkEvent {
  const { usage, requestedToolConfirmations: confirmations, ...actions } = event.actions;
  const requestedToolConfirmations = confirmations
    ? Object.fromEntries(
        Object.entries(confirmations).map(([id, c]) => [id, pickKeys(c, ADK_TOOL_CONFIRMATION_KEYS)]),
      )
    : undefined;
  const shaped = {
    ...event,
    timestamp: event.timestamp / 1000,
    actions: pickKeys({ ...actions, requestedToolConfirmations }, ADK_EVENT_ACTIONS_KEYS),
    nodeInfo: { path: adkNodePath(event.nodePath) },
    ...(usage ? { usageMetadata: adkUsageMetadata(usage) } : {}),
  };
  return pickKeys(shaped, ADK_EVENT_KEYS) as AdkEvent;
}

/** A session as ADK's API server sends it (`events` empty in lists). */
export interface AdkSession {
  id: string;
  appName: string;
  userId: string;
  state: Record<string, unknown>;
  events: AdkEvent[];
  lastUpdateTime: number;
}

export function adkSession(session: SessionRecord, events: Event[] = []): AdkSession {
  return {
    id: session.id,
    appName: session.app,
    userId: session.userId,
    state: session.state,
    events: events.map(adkEvent),
    lastUpdateTime: session.updatedAt.getTime() / 1000,
  };
}

/** An agent as `build_graph` serializes it. */
export interface AdkAgentInfo {
  name: string;
  type: 'agent';
  description?: string;
  model?: string;
  tools?: { name: string; type: 'tool' }[];
  sub_agents?: AdkAgentInfo[];
}

/** The model id and tool names an agent's definition lists (LLM agents), if any. */
function llmParts(agent: BaseAgent): { model?: string; tools: string[] } {
  const definition = agent.definition() as { model?: unknown; tools?: unknown };
  return {
    ...(typeof definition.model === 'string' && definition.model ? { model: definition.model } : {}),
    tools: Array.isArray(definition.tools) ? definition.tools.map(String) : [],
  };
}

export function adkAgentInfo(agent: BaseAgent): AdkAgentInfo {
  const { model, tools } = llmParts(agent);
  return {
    name: agent.name,
    type: 'agent',
    ...(agent.description ? { description: agent.description } : {}),
    ...(model ? { model } : {}),
    ...(tools.length > 0 ? { tools: tools.map((name) => ({ name, type: 'tool' as const })) } : {}),
    ...(agent.subAgents.length > 0 ? { sub_agents: agent.subAgents.map(adkAgentInfo) } : {}),
  };
}

/** The agent at `path` (agent names joined by `/`, the root's name optional), if there is one. */
export function agentAtPath(root: BaseAgent, path: string): BaseAgent | undefined {
  const parts = path.split('/').filter((part) => part !== '');
  let current: BaseAgent | undefined = root;
  for (const part of parts[0] === root.name ? parts.slice(1) : parts) {
    current = current?.subAgents.find((child) => child.name === part);
  }
  return current;
}

/** A DOT string literal. */
function quoted(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** The agent tree as a Graphviz digraph: agents as boxes labelled with their kind, tools as ellipses. */
export function agentGraphDot(root: BaseAgent, dark = false): string {
  const fg = dark ? '#e6e7e9' : '#1d1f21';
  const lines = [
    'digraph agents {',
    `  graph [rankdir=LR, bgcolor="transparent", fontcolor="${fg}"];`,
    `  node [fontname="Helvetica", fontsize=11, color="${fg}", fontcolor="${fg}"];`,
    `  edge [color="${fg}"];`,
  ];
  const visit = (agent: BaseAgent, id: string): void => {
    lines.push(
      `  ${quoted(id)} [shape=box, style=rounded, label=${quoted(`${agent.name}\n${agent.kind}`)}];`,
    );
    for (const tool of llmParts(agent).tools) {
      const toolId = `${id}::tool::${tool}`;
      lines.push(`  ${quoted(toolId)} [shape=ellipse, label=${quoted(tool)}];`);
      lines.push(`  ${quoted(id)} -> ${quoted(toolId)} [style=dashed];`);
    }
    for (const child of agent.subAgents) {
      const childId = `${id}/${child.name}`;
      visit(child, childId);
      lines.push(`  ${quoted(id)} -> ${quoted(childId)};`);
    }
  };
  visit(root, root.name);
  lines.push('}');
  return lines.join('\n');
}
