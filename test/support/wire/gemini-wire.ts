/**
 * A scripted server speaking Gemini's REST wire format (generateContent / streamGenerateContent?alt=sse):
 * `GenerateContentResponse` JSON, one such response per server-sent event, and Google's error body
 * `{"error":{code,message,status,details}}`. Point a Gemini model at it with `httpOptions: { baseUrl: server.url }`.
 */
import { wireFlavour, type SseEvent, type WireReply } from './wire-server.js';

export type { RecordedRequest, ScriptedWireServer, WireReply } from './wire-server.js';

/** Starts a Gemini-flavoured scripted server; with nothing queued it answers a 400 "no reply queued". */
export const startGeminiWire = wireFlavour(() =>
  geminiError(400, 'wire server: no reply queued', 'INVALID_ARGUMENT'),
);

/** Token counts of a scripted answer (`usageMetadata`). */
export interface ScriptedUsage {
  prompt: number;
  candidates: number;
  /** cachedContentTokenCount, left out when not given. */
  cached?: number;
}

function usageBody(usage: ScriptedUsage): Record<string, unknown> {
  return {
    promptTokenCount: usage.prompt,
    candidatesTokenCount: usage.candidates,
    totalTokenCount: usage.prompt + usage.candidates,
    ...(usage.cached === undefined ? {} : { cachedContentTokenCount: usage.cached }),
  };
}

/** One `GenerateContentResponse` body: a model candidate with `parts` (as the wire spells them). */
export function geminiResponse(
  parts: unknown[],
  extra: { finishReason?: string; usage?: ScriptedUsage } = {},
): Record<string, unknown> {
  return {
    candidates: [
      {
        content: { role: 'model', parts },
        ...(extra.finishReason === undefined ? {} : { finishReason: extra.finishReason }),
      },
    ],
    usageMetadata: usageBody(extra.usage ?? { prompt: 7, candidates: 3 }),
  };
}

/** A whole answer (finish reason STOP unless given). */
export function geminiAnswer(
  parts: unknown[],
  extra: { finishReason?: string; usage?: ScriptedUsage } = {},
): WireReply {
  return { kind: 'json', body: geminiResponse(parts, { finishReason: 'STOP', ...extra }) };
}

/** A streamed answer: one server-sent event per chunk (built with {@link geminiResponse}). */
export function geminiStream(chunks: Record<string, unknown>[]): WireReply {
  const events: SseEvent[] = chunks.map((chunk) => ({ data: JSON.stringify(chunk) }));
  return { kind: 'sse', events };
}

/** Google's error body with an HTTP status (and headers, e.g. retry-after; details, e.g. a RetryInfo). */
export function geminiError(
  status: number,
  message: string,
  statusName: string,
  extra: { headers?: Record<string, string>; details?: unknown[] } = {},
): WireReply {
  return {
    kind: 'json',
    status,
    ...(extra.headers ? { headers: extra.headers } : {}),
    body: { error: { code: status, message, status: statusName, details: extra.details ?? [] } },
  };
}
