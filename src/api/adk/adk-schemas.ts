/**
 * Requests of ADK's API-server routes (adk-python 2.5): camelCase as ADK's clients send it, snake_case accepted
 * (Python clients), unknown keys ignored; the user message is a `Content`.
 */
import * as z from 'zod';
import { contentSchema } from '../../core/content.js';
import { appNameSchema } from '../http/schemas.js';

/** snake_case → camelCase of an object's own keys (`new_message` → `newMessage`). */
function camelKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
      v,
    ]),
  );
}

/** A Content as ADK's clients send it: the parts' keys camelCase or snake_case (`function_response`). */
const adkContentSchema = z.preprocess((value) => {
  const content = camelKeys(value) as { parts?: unknown } | unknown;
  if (
    typeof content !== 'object' ||
    content === null ||
    !Array.isArray((content as { parts?: unknown }).parts)
  )
    return content;
  const parts = ((content as { parts: unknown[] }).parts ?? []).map((part) => {
    const p = camelKeys(part) as Record<string, unknown>;
    for (const key of ['functionCall', 'functionResponse', 'inlineData'] as const) {
      if (p[key] !== undefined) p[key] = camelKeys(p[key]);
    }
    return p;
  });
  return { role: 'user', ...(content as object), parts };
}, contentSchema);

const name = z.string().min(1).max(256);

export const adkRunBodySchema = z.preprocess(
  camelKeys,
  z.object({
    appName: appNameSchema,
    userId: name,
    sessionId: name,
    newMessage: adkContentSchema,
    streaming: z.boolean().optional(),
    stateDelta: z.record(z.string(), z.unknown()).nullish(),
    invocationId: name.nullish(),
    functionCallEventId: name.nullish(),
  }),
);
export type AdkRunBody = z.infer<typeof adkRunBodySchema>;

export const adkSessionParamsSchema = z.object({ app: appNameSchema, user: name });
export const adkSessionIdParamsSchema = z.object({ app: appNameSchema, user: name, id: name });

/** `POST …/sessions` — the body may be empty or `null`. */
export const adkCreateSessionBodySchema = z.preprocess(
  camelKeys,
  z
    .object({
      state: z.record(z.string(), z.unknown()).nullish(),
      sessionId: name.nullish(),
      events: z.array(z.unknown()).nullish(),
    })
    .nullish(),
);

export const adkPatchSessionBodySchema = z.preprocess(
  camelKeys,
  z.object({ stateDelta: z.record(z.string(), z.unknown()) }),
);

export const adkAppParamsSchema = z.object({ app: appNameSchema });

export const adkTraceParamsSchema = z.object({ app: appNameSchema, id: name });
