/**
 * Checks an event the ADK routes answered against ADK's event model (the key lists of adk-python's `Event`,
 * `EventActions`, `ToolConfirmation`, `NodeInfo` and google-genai's usage metadata, kept in src/api/adk): what a
 * Python ADK client validating the event would refuse, or silently lose.
 */
import {
  ADK_EVENT_ACTIONS_KEYS,
  ADK_EVENT_KEYS,
  ADK_NODE_INFO_KEYS,
  ADK_TOOL_CONFIRMATION_KEYS,
  ADK_USAGE_METADATA_KEYS,
} from '../../../src/api/adk/adk-event-model.js';

/** The keys of `value` (an object) that `allowed` does not list, each prefixed with `where`. */
function unknownKeys(value: unknown, allowed: readonly string[], where: string): string[] {
  if (typeof value !== 'object' || value === null) return [`${where} is not an object`];
  return Object.keys(value)
    .filter((key) => !allowed.includes(key))
    .map((key) => `${where}${key}`);
}

/**
 * Every key of an ADK-route event outside ADK's model, as paths (`actions.modelRequest`); empty when the event is
 * one ADK's own server could have sent.
 */
export function keysOutsideAdkModel(event: Record<string, unknown>): string[] {
  const found = unknownKeys(event, ADK_EVENT_KEYS, '');
  found.push(...unknownKeys(event.actions, ADK_EVENT_ACTIONS_KEYS, 'actions.'));
  found.push(...unknownKeys(event.nodeInfo, ADK_NODE_INFO_KEYS, 'nodeInfo.'));
  if (event.usageMetadata !== undefined) {
    found.push(...unknownKeys(event.usageMetadata, ADK_USAGE_METADATA_KEYS, 'usageMetadata.'));
  }
  const actions = (event.actions ?? {}) as { requestedToolConfirmations?: Record<string, unknown> };
  for (const [id, confirmation] of Object.entries(actions.requestedToolConfirmations ?? {})) {
    found.push(
      ...unknownKeys(confirmation, ADK_TOOL_CONFIRMATION_KEYS, `actions.requestedToolConfirmations.${id}.`),
    );
  }
  return found;
}
