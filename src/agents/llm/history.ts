/**
 * The contents a model sees (SEMANTICS §3 "History"): the session's events filtered by branch, without
 * checkpoint events and framework calls; other agents' events presented as user context.
 */
import { functionResponsesOf, type Content, type Part } from '../../core/content.js';
import type { Event } from '../../core/event.js';
import { branchVisibility, visibleOnBranch } from '../branch.js';

import { isFrameworkCall } from './journal.js';

export { isFrameworkCall };

/**
 * Whether an event of `eventBranch` is visible to an agent on `agentBranch` (see {@link visibleOnBranch}): no
 * branch, the same branch or an ancestor, or a lane of a fan-out the agent's branch has passed; an agent on no
 * branch sees every branch (as ADK does).
 */
export function visibleToBranch(eventBranch: string | undefined, agentBranch: string | undefined): boolean {
  return visibleOnBranch(eventBranch, agentBranch);
}

/** Options of {@link buildHistory}. */
export interface HistoryOptions {
  agentName: string;
  branch?: string;
  includeContents: 'default' | 'none';
}

function hasContent(event: Event): boolean {
  if (!event.content || event.content.parts.length === 0) return false;
  return !event.partial && !event.errorCode;
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

/**
 * With includeContents 'none': the index of the current turn's first event (the latest message of the user or of
 * another agent); 0 otherwise.
 */
function currentTurnStart(visible: readonly Event[], options: HistoryOptions): number {
  if (options.includeContents !== 'none') return 0;
  for (let i = visible.length - 1; i >= 0; i--) {
    const e = visible[i] as Event;
    const userMessage = e.author === 'user' && functionResponsesOf(e.content).length === 0;
    if (userMessage || e.author !== options.agentName) return i;
  }
  return 0;
}

interface Entry {
  event: Event;
  parts: Part[];
}

/** The responses (by call id) to function calls this agent made in `entries`, from its own or the user's events. */
function answersToOwnCalls(entries: readonly Entry[], agentName: string): Map<string, Part> {
  const callIds = new Set<string>();
  for (const { event, parts } of entries) {
    if (event.author !== agentName) continue;
    for (const part of parts) if (part.functionCall?.id !== undefined) callIds.add(part.functionCall.id);
  }
  const answers = new Map<string, Part>();
  for (const { event, parts } of entries) {
    if (event.author !== agentName && event.author !== 'user') continue;
    for (const part of parts) {
      const id = part.functionResponse?.id;
      if (id !== undefined && callIds.has(id)) answers.set(id, part);
    }
  }
  return answers;
}

/** The answers to the calls among `parts`, in the order of the calls (concurrent calls are stored as they end). */
function responsesInCallOrder(parts: readonly Part[], answers: ReadonlyMap<string, Part>): Content {
  const responses = parts.flatMap((part) => {
    const answer = part.functionCall?.id === undefined ? undefined : answers.get(part.functionCall.id);
    return answer ? [answer] : [];
  });
  return { role: 'user', parts: responses };
}

/** Appends a content unless it says nothing; consecutive function-response contents become one. */
function append(contents: Content[], content: Content): void {
  if (content.parts.length === 0) return;
  if (content.parts.length === 1 && content.parts[0]?.text === 'For context:') return;
  const previous = contents.at(-1);
  if (previous && onlyResponses(previous) && onlyResponses(content)) previous.parts.push(...content.parts);
  else contents.push(content);
}

/**
 * Builds the model request contents for an agent: the visible events of its branch (or only the current turn),
 * each answer to one of its function calls placed right after the call, in the order of the calls.
 */
export function buildHistory(events: readonly Event[], options: HistoryOptions): Content[] {
  const onBranch = branchVisibility(options.branch);
  const visible = events.filter((e) => hasContent(e) && onBranch(e.branch));
  const slice = visible.slice(currentTurnStart(visible, options));
  const lastResponse = new Map<string, number>();
  slice.forEach((e, i) =>
    functionResponsesOf(e.content).forEach((r) => r.id !== undefined && lastResponse.set(r.id, i)),
  );
  const entries = slice.map((event, index) => ({ event, parts: cleanParts(event, index, lastResponse) }));
  const answers = answersToOwnCalls(entries, options.agentName);
  const contents: Content[] = [];
  for (const { event, parts } of entries) {
    const own = event.author === options.agentName;
    if (!own && event.author !== 'user') {
      append(contents, presentOther(event.author, parts));
      continue;
    }
    // Answers to this agent's calls are placed right after their call, not where they were stored.
    const kept = parts.filter((p) => !answers.has(p.functionResponse?.id ?? ''));
    append(contents, { role: event.content?.role ?? 'user', parts: kept });
    if (own) append(contents, responsesInCallOrder(parts, answers));
  }
  return contents;
}
