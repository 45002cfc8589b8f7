/** Runs' histories normalised for comparing them (the distributed e2e suite: a run across crashes vs one without). */
import type { Engine, Event } from '../../../src/index.js';

/**
 * A run's history without ids, seqs and timestamps: one line per event with its author and its parts (text,
 * function call name + args, function response name + response), in order.
 */
export function normalizeHistory(events: Event[]): string[] {
  return events.map((e) => {
    const parts = (e.content?.parts ?? []).map((p) => {
      if (p.functionCall) return `call ${p.functionCall.name}(${JSON.stringify(p.functionCall.args ?? {})})`;
      if (p.functionResponse) {
        return `response ${p.functionResponse.name} ${JSON.stringify(p.functionResponse.response ?? {})}`;
      }
      return `text ${JSON.stringify(p.text ?? '')}`;
    });
    const flags = [e.actions.escalate ? 'escalate' : '', e.actions.endOfAgent ? 'end' : ''].filter(Boolean);
    return `${e.author}${e.branch ? `@${e.branch}` : ''}: ${parts.join(' | ') || '-'}${flags.length ? ` [${flags.join(',')}]` : ''}`;
  });
}

/** The stored events of one invocation, in order, normalised (the user's input line included). */
export async function invocationHistory(engine: Engine, invocationId: string): Promise<string[]> {
  const events: Event[] = [];
  for await (const event of engine.events(invocationId)) events.push(event);
  return normalizeHistory(events);
}
