import * as z from 'zod';
import { contentSchema, functionCallsOf, functionResponsesOf, type Content } from './content.js';
import { newId } from './ids.js';

/** One atomic list append requested by `toolContext.appendToState(key, value)`. */
export const stateAppendSchema = z.object({ key: z.string().min(1), value: z.unknown() });
export type StateAppend = z.infer<typeof stateAppendSchema>;

/** A tool confirmation request or answer (ADK's `ToolConfirmation`). */
export const toolConfirmationSchema = z.object({
  hint: z.string().optional(),
  confirmed: z.boolean(),
  payload: z.unknown().optional(),
});
export type ToolConfirmation = z.infer<typeof toolConfirmationSchema>;

/** What an event does besides carrying content. */
export const eventActionsSchema = z.object({
  stateDelta: z.record(z.string(), z.unknown()).default({}),
  artifactDelta: z.record(z.string(), z.number().int()).default({}),
  appendToState: z.array(stateAppendSchema).optional(),
  escalate: z.boolean().optional(),
  transferToAgent: z.string().optional(),
  skipSummarization: z.boolean().optional(),
  agentState: z.record(z.string(), z.unknown()).optional(),
  endOfAgent: z.boolean().optional(),
  endInvocation: z.boolean().optional(),
  requestedToolConfirmations: z.record(z.string(), toolConfirmationSchema).optional(),
  /**
   * On a model event: digests of the request (rendered system instruction, tool declarations) the response
   * answered; replay compares them (agents/llm/request-digest.ts). `maxOutputTokens`: the output limit the call
   * was sent with when a budget lowered it to what was left.
   */
  modelRequest: z
    .object({ instruction: z.string(), tools: z.string(), maxOutputTokens: z.number().int().optional() })
    .optional(),
  /** On a model event: the tokens the provider reported for the call (ADK's usageMetadata), when it did. */
  usage: z
    .object({
      promptTokens: z.number().optional(),
      outputTokens: z.number().optional(),
      totalTokens: z.number().optional(),
      cachedTokens: z.number().optional(),
    })
    .optional(),
});
export type EventActions = z.infer<typeof eventActionsSchema>;
export type EventActionsInput = z.input<typeof eventActionsSchema>;

/** An event as stored: the unit of history (SEMANTICS §6). */
export const eventSchema = z.object({
  id: z.string().min(1),
  /** Empty for events appended outside an invocation. */
  invocationId: z.string(),
  author: z.string().min(1),
  branch: z.string().optional(),
  nodePath: z.string(),
  seq: z.number().int().nonnegative(),
  timestamp: z.number(),
  content: contentSchema.optional(),
  partial: z.boolean().optional(),
  errorCode: z.string().optional(),
  errorMessage: z.string().optional(),
  longRunningToolIds: z.array(z.string()).optional(),
  actions: eventActionsSchema,
});
export type Event = z.infer<typeof eventSchema>;

/**
 * An event before it is stored: what agents produce. `id`, `seq` and `timestamp` are assigned on append;
 * `invocationId`, `branch` and `nodePath` are stamped by the engine from the producing node.
 */
export const newEventSchema = z.object({
  id: z.string().min(1).optional(),
  author: z.string().min(1),
  branch: z.string().optional(),
  content: contentSchema.optional(),
  partial: z.boolean().optional(),
  errorCode: z.string().optional(),
  errorMessage: z.string().optional(),
  longRunningToolIds: z.array(z.string()).optional(),
  actions: eventActionsSchema.default({ stateDelta: {}, artifactDelta: {} }),
});
export type NewEvent = z.input<typeof newEventSchema>;

/** Options of {@link createEvent}. */
export interface CreateEventOptions {
  author: string;
  content?: Content;
  actions?: EventActionsInput;
  branch?: string;
  errorCode?: string;
  errorMessage?: string;
  longRunningToolIds?: string[];
  partial?: boolean;
}

/** Builds an event for a custom agent to yield; ids, seq and timestamp are filled in when it is stored. */
export function createEvent(options: CreateEventOptions): Event {
  return {
    id: newId('evt'),
    invocationId: '',
    nodePath: '',
    seq: 0,
    timestamp: Date.now(),
    ...options,
    actions: eventActionsSchema.parse(options.actions ?? {}),
  };
}

/**
 * True when the event is a final response of its agent: it skips summarization, or has long-running calls,
 * or has no function calls and responses and is not partial.
 */
export function isFinalResponse(
  event: Pick<Event, 'actions' | 'content' | 'longRunningToolIds' | 'partial'>,
): boolean {
  if (event.actions.skipSummarization || (event.longRunningToolIds?.length ?? 0) > 0) return true;
  return (
    functionCallsOf(event.content).length === 0 &&
    functionResponsesOf(event.content).length === 0 &&
    !event.partial
  );
}
