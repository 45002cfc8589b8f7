/** One-line renderings of events and nodes for terminals. */
import type { Event, NodeView } from '../../index.js';

const clip = (text: string, max = 110) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** `#seq [branch] author: what happened`. */
export function formatEvent(event: Event): string {
  const where = event.branch ? ` [${event.branch}]` : '';
  const head = `#${String(event.seq).padStart(3)}${where} ${event.author}`;
  if (event.errorCode) return `${head}: ✗ ${event.errorCode}: ${event.errorMessage ?? ''}`;
  const parts: string[] = [];
  for (const part of event.content?.parts ?? []) {
    if (part.text) parts.push(clip(JSON.stringify(part.text).slice(1, -1)));
    if (part.functionCall)
      parts.push(`→ ${part.functionCall.name}(${clip(JSON.stringify(part.functionCall.args ?? {}), 80)})`);
    if (part.functionResponse)
      parts.push(
        `← ${part.functionResponse.name}: ${clip(JSON.stringify(part.functionResponse.response), 80)}`,
      );
  }
  const actions = event.actions;
  if (actions.agentState) parts.push(`checkpoint ${JSON.stringify(actions.agentState)}`);
  if (actions.endOfAgent) parts.push('end of agent');
  if (actions.escalate) parts.push('escalate');
  const delta = Object.keys(actions.stateDelta ?? {});
  if (delta.length > 0) parts.push(`state += ${delta.join(', ')}`);
  return `${head}: ${parts.join('  ') || '(no content)'}`;
}

/** `path  status  checkpoint`. */
export function formatNode(node: NodeView): string {
  const checkpoint = Object.keys(node.checkpoint).length > 0 ? JSON.stringify(node.checkpoint) : '';
  return `  ${node.path.padEnd(44)} ${node.status.padEnd(10)} ${checkpoint}`;
}
