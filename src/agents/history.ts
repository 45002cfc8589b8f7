/**
 * The contents a model sees (SEMANTICS §3 "History"): the session's events filtered by branch, without
 * checkpoint events and framework calls; other agents' events presented as user context.
 */
import { functionResponsesOf, type Content, type Part } from '../core/content.js';
import type { Event } from '../core/event.js';

const FRAMEWORK_CALLS = new Set(['adk_request_confirmation', 'adk_request_credential']);

/** Whether a function name belongs to the framework rather than to a tool. */
export function isFrameworkCall(name: string): boolean {
  return FRAMEWORK_CALLS.has(name);
}

/**
 * An event of `eventBranch` is visible on `agentBranch` when it has no branch, is the same branch or an ancestor;
 * an agent on no branch (after a fan-out) sees every branch (as ADK does).
 */
export function visibleToBranch(eventBranch: string | undefined, agentBranch: string | undefined): boolean {
  if (!eventBranch || !agentBranch) return true;
  return agentBranch === eventBranch || agentBranch.startsWith(`${eventBranch}.`);
}

/** Options of {@link buildHistory}. */
export interface HistoryOptions {
  agentName: string;
  branch?: string;
  includeContents: 'default' | 'none';
}

function usable(event: Event, branch: string | undefined): boolean {
  if (!event.content || event.content.parts.length === 0) return false;
  if (event.partial || event.errorCode) return false;
  return visibleToBranch(event.branch, branch);
}

/** Parts without framework calls/responses and without responses superseded by a later one for the same id. */
function cleanParts(event: Event, index: number, lastResponse: Map<string, number>): Part[] {
  return (event.content?.parts ?? []).filter((part) => {
    if (part.functionCall && isFrameworkCall(part.functionCall.name)) return false;
    if (part.functionResponse) {
      if (isFrameworkCall(part.functionResponse.name)) return false;
      const id = part.functionResponse.id;
      if (id !== undefined && lastResponse.get(id) !== index) return false;
    }
    return true;
  });
}

function presentOther(author: string, parts: Part[]): Content {
  const out: Part[] = [{ text: 'For context:' }];
  for (const part of parts) {
    if (part.thought) continue;
    if (part.text !== undefined) out.push({ text: `[${author}] said: ${part.text}` });
    else if (part.functionCall) {
      out.push({
        text: `[${author}] called tool \`${part.functionCall.name}\` with parameters: ${JSON.stringify(part.functionCall.args ?? {})}`,
      });
    } else if (part.functionResponse) {
      out.push({
        text: `[${author}] \`${part.functionResponse.name}\` tool returned result: ${JSON.stringify(part.functionResponse.response)}`,
      });
    }
  }
  return { role: 'user', parts: out };
}

const onlyResponses = (c: Content) =>
  c.role === 'user' && c.parts.length > 0 && c.parts.every((p) => p.functionResponse);

/** Builds the model request contents for an agent. */
export function buildHistory(events: readonly Event[], options: HistoryOptions): Content[] {
  const visible = events.filter((e) => usable(e, options.branch));
  let from = 0;
  if (options.includeContents === 'none') {
    // The current turn: from the latest message of the user or of another agent onward.
    for (let i = visible.length - 1; i >= 0; i--) {
      const e = visible[i] as Event;
      const userMessage = e.author === 'user' && functionResponsesOf(e.content).length === 0;
      if (userMessage || e.author !== options.agentName) {
        from = i;
        break;
      }
    }
  }
  const slice = visible.slice(from);
  const lastResponse = new Map<string, number>();
  slice.forEach((e, i) =>
    functionResponsesOf(e.content).forEach((r) => r.id !== undefined && lastResponse.set(r.id, i)),
  );
  const contents: Content[] = [];
  slice.forEach((event, index) => {
    const parts = cleanParts(event, index, lastResponse);
    if (parts.length === 0) return;
    const content: Content =
      event.author === 'user' || event.author === options.agentName
        ? { role: event.content?.role ?? 'user', parts }
        : presentOther(event.author, parts);
    if (
      content.parts.length === 0 ||
      (content.parts.length === 1 && content.parts[0]?.text === 'For context:')
    )
      return;
    const previous = contents.at(-1);
    if (previous && onlyResponses(previous) && onlyResponses(content)) previous.parts.push(...content.parts);
    else contents.push(content);
  });
  return contents;
}
