/**
 * Request and response schemas of the HTTP API (zod). Fastify validates requests and serializes responses with
 * them, and `/openapi.json` is generated from them, so the document cannot drift from what the server does.
 * Event and content shapes are the library's own (core/event.ts, core/content.ts).
 */
import * as z from 'zod';
import { contentSchema } from '../../core/content.js';
import { eventSchema } from '../../core/event.js';
import { PENDING_KINDS } from '../../engine/runs/views.js';

/** Nesting allowed in free-form JSON (`input`, `stateDelta`, answers); deeper documents are refused. */
const MAX_JSON_DEPTH = 64;
/** No control characters: ids and names travel in paths, logs and PostgreSQL `text` columns. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const PLAIN_TEXT = /^[^\u0000-\u001f\u007f]*$/;
/** A lone UTF-16 surrogate cannot be stored in PostgreSQL `jsonb`. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a JSON string cannot be stored, if it cannot. */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000), which PostgreSQL cannot store';
  if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate; send valid Unicode';
  return undefined;
}

/**
 * Refuses JSON that PostgreSQL would refuse (NUL characters, lone surrogates, in keys or values) or that nests
 * deeper than {@link MAX_JSON_DEPTH}, naming the path of the first offending value.
 */
export function storableJson(
  value: unknown,
  ctx: z.RefinementCtx,
  path: (string | number)[] = [],
  depth = 0,
): void {
  if (typeof value === 'string') {
    const why = unstorable(value);
    if (why) ctx.addIssue({ code: 'custom', message: why, path });
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth >= MAX_JSON_DEPTH) {
    ctx.addIssue({ code: 'custom', message: `nests deeper than ${MAX_JSON_DEPTH} levels`, path });
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    const at = [...path, Array.isArray(value) ? Number(key) : key];
    const why = unstorable(key);
    if (why) ctx.addIssue({ code: 'custom', message: `key ${why}`, path: at });
    storableJson(child, ctx, at, depth + 1);
  }
}

/** A short single-line string: ids, names, keys. */
export const text = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(PLAIN_TEXT, 'must not contain control characters')
    .refine((s) => !LONE_SURROGATE.test(s), 'contains a lone UTF-16 surrogate; send valid Unicode');

/** A JSON object that PostgreSQL can store. */
export const jsonObject = z.record(z.string(), z.unknown()).superRefine((v, ctx) => storableJson(v, ctx));

/** A whole number in a query string (`?after=12`). */
const digits = (max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .refine((n) => n <= max, `must be at most ${max}`);

/** A yes/no flag in a query string (`?stay=1`). */
const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

const APP_NAME = /^[A-Za-z0-9_.-]+$/;
export const appNameSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(APP_NAME, 'an app name: letters, digits, _ . -');

export const INVOCATION_STATUSES = [
  'queued',
  'running',
  'paused',
  'completed',
  'failed',
  'cancelled',
] as const;

// ---- parameters ----

export const appParamsSchema = z.object({ app: appNameSchema });
export const idParamsSchema = z.object({ id: text(256) });
export const callParamsSchema = z.object({ id: text(256), callId: text(256) });

// ---- requests ----

export const enqueueBodySchema = z.strictObject({
  userId: text(256),
  sessionId: text(256).optional(),
  input: z
    .union([z.string().max(1_000_000), contentSchema])
    .superRefine((v, ctx) => storableJson(v, ctx))
    .describe('the user message: text, or a Content {role, parts}'),
  stateDelta: jsonObject.optional(),
  maxLlmCalls: z.number().int().min(1).max(1_000_000).optional(),
  budget: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "this run's budget, over the app's field by field: {tokens?, inputTokens?, outputTokens?, costUsd?, modelCalls?, onExceeded?: 'pause'|'fail'}",
    ),
  idempotencyKey: text(256).optional(),
  startAt: z
    .enum(['auto', 'root'])
    .optional()
    .describe(
      "in an existing session: 'auto' (default) starts at the agent the conversation was transferred to, 'root' at the root agent",
    ),
});
export type EnqueueBody = z.infer<typeof enqueueBodySchema>;

export const listQuerySchema = z.strictObject({
  app: appNameSchema.optional(),
  status: z.enum(INVOCATION_STATUSES).optional(),
  userId: text(256).optional(),
  limit: digits(200)
    .refine((n) => n >= 1, 'must be at least 1')
    .optional(),
  cursor: z.string().min(1).max(512).optional().describe('`nextCursor` of the previous page'),
});

export const eventsQuerySchema = z.strictObject({
  after: digits(Number.MAX_SAFE_INTEGER).optional().describe('only events with a greater seq'),
  limit: digits(10_000)
    .refine((n) => n >= 1, 'must be at least 1')
    .optional()
    .describe('JSON list only: at most this many events (default 1000)'),
  stay: flag
    .optional()
    .describe(
      'SSE only: stay open through pauses until the run has ended (default true); 0: end at the first settle',
    ),
  partial: flag.optional().describe('SSE only: include streamed partial events (default true)'),
});

export const functionResponsesBodySchema = z.strictObject({
  functionResponses: z
    .array(
      z.strictObject({
        id: text(256).describe('pending[].callId of the call answered'),
        name: text(256).optional(),
        response: jsonObject,
      }),
    )
    .min(1)
    .max(100),
});

export const confirmationBodySchema = z.strictObject({
  confirmed: z.boolean(),
  payload: z
    .unknown()
    .superRefine((v, ctx) => storableJson(v, ctx))
    .optional(),
});

export const retryBodySchema = z
  .strictObject({
    maxLlmCalls: z.number().int().min(1).max(1_000_000).optional(),
    budget: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("the run's budget raised field by field before it runs again (e.g. {tokens: 5000})"),
  })
  .nullish();

// ---- responses ----

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .meta({ id: 'Error' });

const elicitationSchema = z
  .object({
    message: z.string(),
    requestedSchema: z.record(z.string(), z.unknown()).describe('the JSON Schema of the content asked for'),
    source: z.string().optional().describe('who asks: the MCP server'),
  })
  .meta({ id: 'Elicitation' });

export const pendingCallSchema = z
  .object({
    callId: z.string().describe('the id to answer'),
    kind: z.enum(PENDING_KINDS),
    name: z.string(),
    args: z.record(z.string(), z.unknown()),
    hint: z.string().optional(),
    payload: z.unknown().optional(),
    nodePath: z.string(),
    branch: z.string().optional(),
    originalCallId: z.string(),
    elicitation: elicitationSchema
      .optional()
      .describe('with kind "elicitation": what the open call asks (answer {action, content?})'),
    auth: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('with kind "auth": {authScheme, credentialKey}; answer with {exchangedAuthCredential}'),
  })
  .meta({ id: 'PendingCall' });

const storedErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});

const invocationFields = {
  id: z.string(),
  app: z.string(),
  sessionId: z.string(),
  userId: z.string(),
  status: z.enum(INVOCATION_STATUSES),
  escalated: z.boolean(),
  output: z.string().nullable(),
  error: storedErrorSchema.nullable(),
  llmCalls: z.number().int(),
  maxLlmCalls: z.number().int(),
  definitionHash: z.string(),
  createdAt: z.string().describe('ISO 8601'),
  updatedAt: z.string().describe('ISO 8601'),
  forkedFrom: z.string().optional().describe('the invocation this one was forked from'),
  fork: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('how it was forked: {at, state?, instruction?, input?}'),
};

const spendFields = {
  tokens: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().describe('USD at the price table'),
  modelCalls: z.number().int(),
};

const spentSchema = z
  .object({ ...spendFields, byAgent: z.record(z.string(), z.object(spendFields)) })
  .describe("what the run's counted model calls spent, in total and by agent")
  .meta({ id: 'Spent' });

export const invocationSummarySchema = z.object(invocationFields).meta({ id: 'InvocationSummary' });
export const invocationSchema = z
  .object({
    ...invocationFields,
    traceId: z
      .string()
      .describe(
        "the run's OpenTelemetry trace id (32 hex digits): the caller's traceparent, else derived from the id",
      ),
    traceUrl: z
      .string()
      .optional()
      .describe('where the trace is shown (AGENTLOOM_TRACE_URL with the trace id)'),
    pending: z.array(pendingCallSchema),
    budget: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        "the run's budget as it stands (the app's and the invocation's, raised by answers); null: none",
      ),
    spent: spentSchema,
  })
  .meta({ id: 'Invocation' });
export type InvocationJson = z.infer<typeof invocationSchema>;
export type InvocationSummaryJson = z.infer<typeof invocationSummarySchema>;

export const enqueueResultSchema = z.object({
  invocationId: z.string(),
  sessionId: z.string(),
  status: z.string(),
});

export const invocationPageSchema = z.object({
  invocations: z.array(invocationSummarySchema),
  nextCursor: z.string().nullable().describe('pass as `cursor` for the next page; null after the last'),
});

export const apiEventSchema = eventSchema.meta({ id: 'Event' });

export const eventListSchema = z.object({
  events: z.array(apiEventSchema),
  nextAfter: z.number().int().nullable().describe('pass as `after` for more; null when there are no more'),
});

export const nodeSchema = z
  .object({
    path: z.string(),
    agent: z.string(),
    kind: z.string(),
    status: z.string(),
    branch: z.string().optional(),
    checkpoint: z.record(z.string(), z.unknown()),
    escalated: z.boolean(),
    attempt: z.number().int().describe('claims so far: the fencing token of its steps'),
    parentPath: z.string().nullable(),
    output: z.string().nullable(),
    error: storedErrorSchema.nullable(),
    lease: z
      .object({ owner: z.string(), expiresAt: z.string().describe('ISO 8601') })
      .nullable()
      .describe(
        'the worker running a step of the node, while it does (or until its lease lapses after a crash)',
      ),
    waiting: z
      .object({
        kind: z.literal('rate_limit'),
        model: z.string(),
        limit: z
          .string()
          .describe('the limit that refused: a model id, a provider or *, with (app …) for a share'),
        until: z.string().describe('ISO 8601: when the step runs again'),
      })
      .nullable()
      .describe(
        'what a running step that gave back its worker waits for (a model rate limit), while it waits',
      ),
    createdAt: z.string().describe('ISO 8601'),
    updatedAt: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'Node' });

export type NodeJson = z.infer<typeof nodeSchema>;
export const nodeListSchema = z.object({ nodes: z.array(nodeSchema) });

export const inboxQuerySchema = z.strictObject({
  app: appNameSchema.optional(),
  kind: z.enum(PENDING_KINDS).optional(),
  limit: digits(500)
    .refine((n) => n >= 1, 'must be at least 1')
    .optional()
    .describe('at most this many calls, oldest first (default 200)'),
});

export const inboxItemSchema = pendingCallSchema
  .extend({
    invocationId: z.string(),
    app: z.string(),
    userId: z.string(),
    sessionId: z.string(),
    invocationStatus: z.enum(INVOCATION_STATUSES),
    since: z.string().describe('ISO 8601: when the call began to wait'),
  })
  .meta({ id: 'InboxItem' });

export type InboxItemJson = z.infer<typeof inboxItemSchema>;

export const inboxSchema = z.object({
  calls: z.array(inboxItemSchema),
  more: z.boolean().describe('true when more calls wait than `limit` returned'),
});

export const toolRequestSchema = z
  .object({
    callId: z.string(),
    kind: z.enum(PENDING_KINDS),
    name: z.string(),
    args: z.record(z.string(), z.unknown()),
    hint: z.string().optional(),
    nodePath: z.string(),
    branch: z.string().optional(),
    originalCallId: z.string(),
    elicitation: elicitationSchema.optional(),
    auth: z.record(z.string(), z.unknown()).optional(),
    status: z
      .enum(['pending', 'answered', 'cancelled', 'expired'])
      .describe(
        'cancelled: withdrawn with its invocation (a retry asks again); expired: an elicitation nobody answered in time (declined), or whose call ended with its worker',
      ),
    response: z.unknown().nullable(),
    answeredBy: z.string().nullable().describe("the API key's name, or the name a keyless client gave"),
    answeredAt: z.string().nullable().describe('ISO 8601'),
    createdAt: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'ToolRequest' });

export type ToolRequestJson = z.infer<typeof toolRequestSchema>;

export const toolRequestListSchema = z.object({ requests: z.array(toolRequestSchema) });

export const sessionSchema = z
  .object({
    id: z.string(),
    app: z.string(),
    userId: z.string(),
    state: z.record(z.string(), z.unknown()),
    events: z.array(apiEventSchema),
  })
  .meta({ id: 'Session' });

/** One agent of an app's tree. */
export interface AgentNodeJson {
  name: string;
  kind: string;
  description: string;
  tools?: string[];
  children: AgentNodeJson[];
}

export const agentNodeSchema: z.ZodType<AgentNodeJson> = z
  .object({
    name: z.string(),
    kind: z.string(),
    description: z.string(),
    tools: z.array(z.string()).optional(),
    get children() {
      return z.array(agentNodeSchema);
    },
  })
  .meta({ id: 'AgentNode' });

export const appSchema = z
  .object({
    name: z.string(),
    definitionHash: z.string().describe('an invocation runs only on workers serving this definition'),
    root: agentNodeSchema,
  })
  .meta({ id: 'App' });

export const appListSchema = z.object({ apps: z.array(appSchema) });

export const healthSchema = z.object({ status: z.literal('ok') });
export const readySchema = z.object({
  status: z.enum(['ready', 'unavailable']),
  checks: z.object({ database: z.string(), queue: z.string() }).describe('"ok" or what failed'),
});
