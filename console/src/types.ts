/**
 * The API's JSON shapes, taken from its zod schemas (type-only: nothing of the server is bundled), so the console
 * cannot drift from what the server sends.
 */
import type * as z from 'zod';
import type {
  appListSchema,
  errorSchema,
  inboxSchema,
  invocationPageSchema,
  invocationSchema,
  nodeListSchema,
  sessionSchema,
  toolRequestListSchema,
} from '../../src/api/http/schemas.js';
import type { diffSchema } from '../../src/api/http/fork-schemas.js';
import type { Event } from '../../src/core/event.js';

export type ApiErrorBody = Partial<z.infer<typeof errorSchema>>;
export type Invocation = z.infer<typeof invocationSchema>;
export type InvocationPage = z.infer<typeof invocationPageSchema>;
export type InvocationSummary = InvocationPage['invocations'][number];
export type PendingCall = Invocation['pending'][number];
export type Inbox = z.infer<typeof inboxSchema>;
export type InboxItem = Inbox['calls'][number];
export type NodeList = z.infer<typeof nodeListSchema>;
export type RunNode = NodeList['nodes'][number];
export type ToolRequestList = z.infer<typeof toolRequestListSchema>;
export type ToolRequest = ToolRequestList['requests'][number];
export type Session = z.infer<typeof sessionSchema>;
export type AppList = z.infer<typeof appListSchema>;
export type ApiEvent = Event;
export type RunStatus = Invocation['status'];
export type RunDiff = z.infer<typeof diffSchema>;
