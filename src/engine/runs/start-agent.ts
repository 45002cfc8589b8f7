/**
 * Which agent a new message of a session goes to (ADK's `Runner._find_agent_to_run`): the agent the conversation
 * was transferred to, when it can still transfer back up the tree; otherwise the app's root agent.
 */
import type { BaseAgent } from '../../agents/base-agent.js';
import { isTransferableAcrossTree } from '../../agents/llm/llm-agent.js';
import type { Db } from '../../store/db/database.js';
import { lastAuthorAmong } from '../../store/repos/sessions.js';
import type { RegisteredApp } from '../apps/registry.js';

/** Where an invocation starts: `'auto'` (the agent that took over the conversation) or always `'root'`. */
export type StartAt = 'auto' | 'root';

/** The sub-agents of the tree that may keep a conversation: LlmAgents that can transfer back up to the root. */
function agentsThatKeepConversations(root: BaseAgent): BaseAgent[] {
  return [...root.descendants()].filter((agent) => agent !== root && isTransferableAcrossTree(agent));
}

/**
 * The agent a new message of an existing session starts at: the newest author among the root and the agents that
 * may keep a conversation (checkpoint events skipped); the root when none spoke. Trees whose root cannot
 * transfer (a workflow agent) always start at the root, without a query.
 */
export async function agentToContinue(db: Db, app: RegisteredApp, sessionId: string): Promise<BaseAgent> {
  const candidates = agentsThatKeepConversations(app.root);
  if (candidates.length === 0) return app.root;
  const names = [app.root.name, ...candidates.map((agent) => agent.name)];
  const author = await lastAuthorAmong(db, sessionId, names);
  return candidates.find((agent) => agent.name === author) ?? app.root;
}
