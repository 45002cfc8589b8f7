/**
 * Gemini: the {@link Model} adapter over the `@google/genai` client. It owns the retrying of transient errors
 * (429, 408, 5xx, network); the SDK's own retrying is kept off so that there is exactly one owner.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  GoogleGenAI,
  type Fetch,
  type GenerateContentConfig,
  type GenerateContentParameters,
  type GenerateContentResponse,
  type HttpOptions,
  type Part as GenaiPart,
} from '@google/genai';
import type { Content, Part } from '../core/content.js';
import { AgentloomError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type {
  GenerateOptions,
  Model,
  ModelRequest,
  ModelResponse,
  ModelUsage,
  ToolDeclaration,
} from './model.js';

/** Options of {@link Gemini}. */
export interface GeminiOptions {
  /** Default model id, e.g. 'gemini-2.5-flash' (a request's `model` overrides it). Also the adapter's name. */
  model: string;
  /** Gemini API key. Required unless `vertexai`; never read from the environment here (the config layer does). */
  apiKey?: string;
  /** Use Vertex AI (Application Default Credentials) instead of the Gemini Developer API. */
  vertexai?: boolean;
  /** Vertex AI project and location (the SDK falls back to GOOGLE_CLOUD_PROJECT / GOOGLE_CLOUD_LOCATION). */
  project?: string;
  location?: string;
  /** Passed to the SDK (baseUrl, apiVersion, headers, timeout in ms, fetch); `retryOptions` is ignored. */
  httpOptions?: HttpOptions;
  /** Attempts per call, the first included. Default 5; 1 disables retrying. */
  maxAttempts?: number;
  /** Backoff ceiling before the first retry, in ms; doubles per retry (full jitter). Default 500. */
  initialBackoffMs?: number;
  /** Upper bound of any wait between attempts, server retry hints included, in ms. Default 30000. */
  maxBackoffMs?: number;
}

/** A part as the wire carries it: Gemini 3 needs `thoughtSignature` sent back with the parts that had one. */
type WirePart = Part & { thoughtSignature?: string };

/** Where the fetch wrapper leaves the server's Retry-After of the last failed attempt. */
interface RetryHint {
  retryAfterMs?: number;
}

const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** Gemini over `@google/genai`, with its own bounded retries of transient errors. */
export class Gemini implements Model {
  readonly name: string;
  readonly #client: GoogleGenAI;
  readonly #model: string;
  readonly #baseFetch: Fetch | undefined;
  readonly #maxAttempts: number;
  readonly #initialBackoffMs: number;
  readonly #maxBackoffMs: number;

  /** @throws AgentloomError `CONFIG` when neither `apiKey` nor `vertexai` is given. */
  constructor(options: GeminiOptions) {
    if (!options.apiKey && !options.vertexai) {
      throw new AgentloomError(
        'CONFIG',
        `Gemini model '${options.model}' needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or pass ` +
          `{ apiKey } or { vertexai: true } to new Gemini(…).`,
        { details: { model: options.model } },
      );
    }
    this.name = options.model;
    this.#model = options.model;
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.#initialBackoffMs = options.initialBackoffMs ?? 500;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
    // The SDK retries only when retryOptions is set: dropping it keeps this adapter the single retry owner.
    const { retryOptions: _ignored, ...httpOptions } = options.httpOptions ?? {};
    this.#baseFetch = httpOptions.fetch;
    this.#client = new GoogleGenAI({
      apiKey: options.apiKey,
      vertexai: options.vertexai,
      project: options.project,
      location: options.location,
      httpOptions,
    });
  }

  /**
   * One model call (streamed when `options.onPartial` is given), retried on transient errors.
   * @throws AgentloomError `CANCELLED` when `request.signal` aborts; `MODEL_ERROR` when the call fails for good
   *   (`retryable` says whether the last failure was transient; `details.status` is the HTTP status, if any).
   */
  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    const model = request.model ?? this.#model;
    for (let attempt = 1; ; attempt++) {
      const hint: RetryHint = {};
      try {
        if (request.signal?.aborted) throw request.signal.reason;
        const params = this.#params(request, model, hint);
        return options?.onPartial
          ? await this.#stream(params, options.onPartial)
          : toResponse(await this.#client.models.generateContent(params), toParts);
      } catch (err) {
        if (request.signal?.aborted) throw cancelled(model, err);
        const transient = isTransient(err);
        if (!transient || attempt >= this.#maxAttempts) throw modelError(err, { model, attempt, transient });
        const serverDelayMs = hint.retryAfterMs ?? retryInfoDelayMs(err);
        const ceilingMs = Math.min(this.#maxBackoffMs, this.#initialBackoffMs * 2 ** (attempt - 1));
        const delayMs =
          serverDelayMs === undefined
            ? Math.random() * ceilingMs
            : Math.min(serverDelayMs, this.#maxBackoffMs);
        try {
          await sleep(delayMs, undefined, request.signal ? { signal: request.signal } : undefined);
        } catch (sleepErr) {
          throw cancelled(model, sleepErr);
        }
      }
    }
  }

  #params(request: ModelRequest, model: string, hint: RetryHint): GenerateContentParameters {
    const { httpOptions: configHttp, ...extra } = (request.generateContentConfig ??
      {}) as GenerateContentConfig;
    const { retryOptions: _ignored, ...httpOptions } = configHttp ?? {};
    const config: GenerateContentConfig = {
      ...extra,
      httpOptions: { ...httpOptions, fetch: hintingFetch(httpOptions.fetch ?? this.#baseFetch, hint) },
    };
    if (request.systemInstruction !== '') config.systemInstruction = request.systemInstruction;
    if (request.responseSchema) {
      config.responseMimeType = 'application/json';
      config.responseJsonSchema = request.responseSchema;
    } else if (request.tools.length > 0) {
      config.tools = [...(config.tools ?? []), { functionDeclarations: request.tools.map(toDeclaration) }];
    }
    if (request.signal) config.abortSignal = request.signal;
    return { model, contents: request.contents, config };
  }

  async #stream(
    params: GenerateContentParameters,
    onPartial: (partial: Content) => void,
  ): Promise<ModelResponse> {
    const parts: WirePart[] = [];
    let last: GenerateContentResponse | undefined;
    let finishReason: string | undefined;
    for await (const chunk of await this.#client.models.generateContentStream(params)) {
      last = chunk;
      finishReason = chunk.candidates?.[0]?.finishReason ?? finishReason;
      const chunkParts = toParts(chunk.candidates?.[0]?.content?.parts);
      if (chunkParts.length === 0) continue;
      onPartial({ role: 'model', parts: chunkParts });
      for (const part of chunkParts) appendPart(parts, part);
    }
    const response = last ? toResponse(last, () => parts) : { content: { role: 'model' as const, parts } };
    return finishReason === undefined ? response : { ...response, finishReason };
  }
}

function toDeclaration(tool: ToolDeclaration): {
  name: string;
  description: string;
  parametersJsonSchema?: unknown;
} {
  return tool.parameters === undefined
    ? { name: tool.name, description: tool.description }
    : { name: tool.name, description: tool.description, parametersJsonSchema: tool.parameters };
}

/** Converts SDK parts to ours, giving function calls without an id a fresh one; drops kinds we do not model. */
function toParts(parts: GenaiPart[] | undefined): WirePart[] {
  const out: WirePart[] = [];
  for (const p of parts ?? []) {
    const part: WirePart = {};
    if (p.text !== undefined) part.text = p.text;
    if (p.thought) part.thought = true;
    if (p.functionCall?.name) {
      const { id, name, args } = p.functionCall;
      part.functionCall = { id: id ?? newId('call'), name, args: args ?? {} };
    }
    if (p.inlineData?.data !== undefined && p.inlineData.mimeType !== undefined) {
      part.inlineData = { mimeType: p.inlineData.mimeType, data: p.inlineData.data };
    }
    if (p.thoughtSignature !== undefined) part.thoughtSignature = p.thoughtSignature;
    if (Object.keys(part).length > 0) out.push(part);
  }
  return out;
}

/** Streaming aggregation: text continues the previous text part of the same kind; anything else is appended. */
function appendPart(parts: WirePart[], part: WirePart): void {
  const prev = parts[parts.length - 1];
  const isText = (p: WirePart): boolean => p.text !== undefined && !p.functionCall && !p.inlineData;
  if (prev && isText(prev) && isText(part) && Boolean(prev.thought) === Boolean(part.thought)) {
    prev.text = `${prev.text ?? ''}${part.text ?? ''}`;
    if (part.thoughtSignature !== undefined) prev.thoughtSignature = part.thoughtSignature;
    return;
  }
  parts.push({ ...part });
}

function toResponse(
  response: GenerateContentResponse,
  parts: (p: GenaiPart[] | undefined) => Part[],
): ModelResponse {
  const candidate = response.candidates?.[0];
  const result: ModelResponse = { content: { role: 'model', parts: parts(candidate?.content?.parts) } };
  const finishReason = candidate?.finishReason ?? response.promptFeedback?.blockReason;
  if (finishReason !== undefined) result.finishReason = finishReason;
  const meta = response.usageMetadata;
  if (meta) {
    const usage: ModelUsage = {};
    if (meta.promptTokenCount !== undefined) usage.promptTokens = meta.promptTokenCount;
    if (meta.candidatesTokenCount !== undefined) usage.outputTokens = meta.candidatesTokenCount;
    if (meta.totalTokenCount !== undefined) usage.totalTokens = meta.totalTokenCount;
    result.usage = usage;
  }
  return result;
}

const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');

interface UndiciDispatcher {
  dispatch(opts: object, handler: unknown): boolean;
}

/**
 * A fetch that records the Retry-After header of failed responses in `hint` (the SDK's ApiError drops
 * headers). Like the SDK's own default, Node's fetch gets undici's 300 s header/body timeouts turned off, so a
 * long generation is bounded by `httpOptions.timeout` only.
 */
function hintingFetch(base: Fetch | undefined, hint: RetryHint): Fetch {
  return async (input, init) => {
    let response: Response;
    if (base) {
      response = await base(input, init);
    } else {
      const global = (globalThis as Record<symbol, UndiciDispatcher | undefined>)[GLOBAL_DISPATCHER];
      const dispatcher: UndiciDispatcher | undefined = global && {
        dispatch: (opts, handler) => global.dispatch({ ...opts, headersTimeout: 0, bodyTimeout: 0 }, handler),
      };
      response = await fetch(input, dispatcher ? ({ ...init, dispatcher } as RequestInit) : init);
    }
    if (!response.ok) hint.retryAfterMs = parseRetryAfterMs(response.headers.get('retry-after'));
    return response;
  };
}

/** Retry-After as delta-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
function parseRetryAfterMs(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The JSON error body an SDK error message carries (`{"error":{code,message,status,details}}`), if any. */
function errorBody(err: unknown): { message?: string; status?: string; details?: unknown[] } | undefined {
  if (!(err instanceof Error)) return undefined;
  const start = err.message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed = JSON.parse(err.message.slice(start)) as { error?: unknown };
    return typeof parsed.error === 'object' && parsed.error !== null
      ? (parsed.error as { message?: string; status?: string; details?: unknown[] })
      : undefined;
  } catch {
    return undefined;
  }
}

/** Gemini's google.rpc.RetryInfo `retryDelay` ('1.5s') from the error body, in ms. */
function retryInfoDelayMs(err: unknown): number | undefined {
  for (const detail of errorBody(err)?.details ?? []) {
    const d = detail as { '@type'?: unknown; retryDelay?: unknown };
    if (typeof d['@type'] === 'string' && d['@type'].endsWith('google.rpc.RetryInfo')) {
      const match = typeof d.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(d.retryDelay) : null;
      if (match?.[1] !== undefined) return Number(match[1]) * 1000;
    }
  }
  return undefined;
}

function httpStatus(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return err instanceof Error && err.name === 'ApiError' && typeof status === 'number' ? status : undefined;
}

/** 408, 429 and 5xx; network failures anywhere in the cause chain; a per-attempt timeout (`httpOptions.timeout`). */
function isTransient(err: unknown): boolean {
  const status = httpStatus(err);
  if (status !== undefined) return status === 408 || status === 429 || (status >= 500 && status < 600);
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    if (e.name === 'AbortError' || e.name === 'TimeoutError') return true;
    if (e instanceof TypeError && (e.message === 'fetch failed' || e.message === 'terminated')) return true;
  }
  return false;
}

function cancelled(model: string, cause: unknown): AgentloomError {
  return new AgentloomError('CANCELLED', `The call to Gemini model '${model}' was cancelled.`, {
    details: { model },
    cause,
  });
}

function modelError(
  err: unknown,
  ctx: { model: string; attempt: number; transient: boolean },
): AgentloomError {
  const status = httpStatus(err);
  const body = errorBody(err);
  const what =
    status === undefined ? 'failed' : `failed with HTTP ${status}${body?.status ? ` ${body.status}` : ''}`;
  const reason = body?.message ?? (err instanceof Error ? err.message : String(err));
  const tries = ctx.attempt === 1 ? '' : ` after ${ctx.attempt} attempts`;
  return new AgentloomError('MODEL_ERROR', `Gemini model '${ctx.model}' ${what}${tries}: ${reason}`, {
    retryable: ctx.transient,
    details: { status, model: ctx.model },
    cause: err,
  });
}
