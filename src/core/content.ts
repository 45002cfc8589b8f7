import * as z from 'zod';

/** A function call made by a model (Gemini's `FunctionCall`). */
export const functionCallSchema = z.object({
  id: z.string().optional(),
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()).optional(),
});
export type FunctionCall = z.infer<typeof functionCallSchema>;

/** The result of a function call, sent back to the model (Gemini's `FunctionResponse`). */
export const functionResponseSchema = z.object({
  id: z.string().optional(),
  name: z.string(),
  response: z.record(z.string(), z.unknown()),
});
export type FunctionResponse = z.infer<typeof functionResponseSchema>;

/** One part of a {@link Content}: text, a function call or response, or inline bytes (base64). */
export const partSchema = z.object({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  /** Opaque signature Gemini requires back on function-call turns of thinking models. */
  thoughtSignature: z.string().optional(),
  functionCall: functionCallSchema.optional(),
  functionResponse: functionResponseSchema.optional(),
  inlineData: z.object({ mimeType: z.string(), data: z.string() }).optional(),
});
export type Part = z.infer<typeof partSchema>;

/** A message in Gemini's shape: a role and its parts. */
export const contentSchema = z.object({
  role: z.enum(['user', 'model']),
  parts: z.array(partSchema),
});
export type Content = z.infer<typeof contentSchema>;

/** A user message with one text part. */
export function userText(text: string): Content {
  return { role: 'user', parts: [{ text }] };
}

/** The concatenated non-thought text of a content, or undefined when it has none. */
export function textOf(content: Content | undefined): string | undefined {
  if (!content) return undefined;
  const texts = content.parts.filter((p) => p.text !== undefined && !p.thought).map((p) => p.text as string);
  return texts.length === 0 ? undefined : texts.join('');
}

/** The function calls of a content, in order. */
export function functionCallsOf(content: Content | undefined): FunctionCall[] {
  return (content?.parts ?? []).flatMap((p) => (p.functionCall ? [p.functionCall] : []));
}

/** The function responses of a content, in order. */
export function functionResponsesOf(content: Content | undefined): FunctionResponse[] {
  return (content?.parts ?? []).flatMap((p) => (p.functionResponse ? [p.functionResponse] : []));
}
