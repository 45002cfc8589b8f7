/**
 * ADK's event model as its API server writes it (adk-python 2.x, pydantic with camelCase aliases): the keys an
 * `Event` may carry, the keys of its `EventActions`, and those of its `usageMetadata`. The ADK routes answer events
 * through these lists as an allow-list, so a field of ours (a model event's request digest, the engine's own
 * action keys) never reaches an ADK client: `EventActions` and `ToolConfirmation` are `extra='forbid'`, and a
 * Python client refuses the whole event for one unknown key there.
 */

/**
 * Keys of adk-python's `Event` (src/google/adk/events/event.py) with those of `LlmResponse`
 * (src/google/adk/models/llm_response.py), which it extends.
 */
export const ADK_EVENT_KEYS: readonly string[] = Object.freeze([
  // LlmResponse
  'modelVersion',
  'content',
  'groundingMetadata',
  'partial',
  'turnComplete',
  'turnCompleteReason',
  'finishReason',
  'errorCode',
  'errorMessage',
  'interrupted',
  'customMetadata',
  'usageMetadata',
  'liveSessionResumptionUpdate',
  'liveSessionId',
  'goAway',
  'liveSetupComplete',
  'inputTranscription',
  'outputTranscription',
  'avgLogprobs',
  'logprobsResult',
  'cacheMetadata',
  'citationMetadata',
  'interactionId',
  // Event
  'invocationId',
  'author',
  'actions',
  'output',
  'nodeInfo',
  'longRunningToolIds',
  'branch',
  'id',
  'timestamp',
]);

/** Keys of adk-python's `EventActions` (src/google/adk/events/event_actions.py, `extra='forbid'`). */
export const ADK_EVENT_ACTIONS_KEYS: readonly string[] = Object.freeze([
  'skipSummarization',
  'stateDelta',
  'artifactDelta',
  'transferToAgent',
  'escalate',
  'requestedAuthConfigs',
  'requestedToolConfirmations',
  'compaction',
  'endOfAgent',
  'agentState',
  'rewindBeforeInvocationId',
  'route',
  'renderUiWidgets',
  'setModelResponse',
]);

/** Keys of adk-python's `ToolConfirmation` (src/google/adk/tools/tool_confirmation.py, `extra='forbid'`). */
export const ADK_TOOL_CONFIRMATION_KEYS: readonly string[] = Object.freeze(['hint', 'confirmed', 'payload']);

/** Keys of the `NodeInfo` an ADK event carries as `nodeInfo` (src/google/adk/events/event.py). */
export const ADK_NODE_INFO_KEYS: readonly string[] = Object.freeze([
  'path',
  'executionId',
  'sourceNodeName',
  'parentExecutionId',
]);

/** Keys of google-genai's `GenerateContentResponseUsageMetadata`, an ADK event's `usageMetadata`. */
export const ADK_USAGE_METADATA_KEYS: readonly string[] = Object.freeze([
  'cacheTokensDetails',
  'cachedContentTokenCount',
  'candidatesTokenCount',
  'candidatesTokensDetails',
  'promptTokenCount',
  'promptTokensDetails',
  'thoughtsTokenCount',
  'toolUsePromptTokenCount',
  'toolUsePromptTokensDetails',
  'totalTokenCount',
  'trafficType',
  'initialPromptTokenCount',
]);

/** The own keys of `value` that `allowed` lists, with values that are not `undefined`. */
export function pickKeys<T extends object>(value: T, allowed: readonly string[]): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([key, v]) => allowed.includes(key) && v !== undefined),
  ) as Partial<T>;
}
