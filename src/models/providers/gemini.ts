/**
 * Gemini: the {@link Model} adapter over the `@google/genai` client. Transient errors (408, 409, 429, 5xx,
 * network) are retried by the shared loop of retrying.ts; the SDK's own retrying is kept off so that there is
 * exactly one owner.
 */
import type {
  GoogleGenAI,
  GoogleGenAIOptions,
  Fetch,
  GenerateContentConfig,
  GenerateContentParameters,
  GenerateContentResponse,
  HttpOptions,
  Part as GenaiPart,
} from '@google/genai';
import type { Content, Part } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { patientFetch } from './patient-fetch.js';
import {
  callWithRetries,
  isNetworkFailure,
  isTransientStatus,
  resolveRetryPolicy,
  retryAfterMsOf,
  type AttemptFailure,
  type RetryOptions,
  type RetryPolicy,
} from './retrying.js';
import type {
  GenerateOptions,
  Model,
  ModelRequest,
  ModelResponse,
  ModelUsage,
  ToolDeclaration,
} from '../model.js';

/** Options of {@link Gemini}. */
export interface GeminiOptions extends RetryOptions {
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
}

/** A part as the wire carries it: Gemini 3 needs `thoughtSignature` sent back with the parts that had one. */
type WirePart = Part & { thoughtSignature?: string };

/** Where the fetch wrapper leaves the server's Retry-After of the last failed attempt. */
interface RetryHint {
  retryAfterMs?: number;
}

/** Gemini over `@google/genai`, with its own bounded retries of transient errors. */
export class Gemini implements Model {
  readonly name: string;
  readonly provider = 'Gemini';
  /** The SDK client, made on the first call: a process whose apps use no Gemini model never loads the SDK. */
  #client: Promise<GoogleGenAI> | undefined;
  readonly #clientOptions: GoogleGenAIOptions;
  readonly #model: string;
  readonly #baseFetch: Fetch | undefined;
  readonly #policy: RetryPolicy;
  /** The API key, redacted from errors: a 401's message may echo it. */
  readonly #secrets: readonly string[];

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
    this.#policy = resolveRetryPolicy(options);
    this.#secrets = options.apiKey ? [options.apiKey] : [];
    // The SDK retries only when retryOptions is set: dropping it keeps this adapter the single retry owner.
    const { retryOptions: _ignored, ...httpOptions } = options.httpOptions ?? {};
    this.#baseFetch = httpOptions.fetch;
    this.#clientOptions = {
      apiKey: options.apiKey,
      vertexai: options.vertexai,
      project: options.project,
      location: options.location,
      httpOptions,
    };
  }

  /** The SDK client, importing the SDK and making the client on first use (a failed import is tried again). */
  #clientOf(): Promise<GoogleGenAI> {
    this.#client ??= import('@google/genai').then(({ GoogleGenAI }) => new GoogleGenAI(this.#clientOptions));
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  /**
   * One model call (streamed when `options.onPartial` is given), retried on transient errors.
   * @throws AgentloomError `CANCELLED` when `request.signal` aborts; `MODEL_ERROR` when the call fails for good
   *   (`retryable` says whether the last failure was transient; `details.status` is the HTTP status, if any).
   */
  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    const model = request.model ?? this.#model;
    let hint: RetryHint = {};
    return callWithRetries({
      provider: 'Gemini',
      model,
      policy: this.#policy,
      signal: request.signal,
      sendLeased: options?.sendLeased,
      onRateLimited: options?.onRateLimited,
      secrets: this.#secrets,
      attempt: async () => {
        hint = {};
        const params = this.#params(request, model, hint);
        return options?.onPartial
          ? await this.#stream(params, options.onPartial)
          : toResponse(await (await this.#clientOf()).models.generateContent(params), toParts);
      },
      describe: (err) => describeFailure(err, hint),
    });
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
    const client = await this.#clientOf();
    for await (const chunk of await client.models.generateContentStream(params)) {
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
    if (meta.cachedContentTokenCount !== undefined) usage.cachedTokens = meta.cachedContentTokenCount;
    result.usage = usage;
  }
  return result;
}

/**
 * A fetch that records the retry hint of failed responses in `hint` (the SDK's ApiError drops headers), over
 * {@link patientFetch} (undici's 300 s timeouts off: a long generation is bounded by `httpOptions.timeout`).
 */
function hintingFetch(base: Fetch | undefined, hint: RetryHint): Fetch {
  const send = patientFetch(base);
  return async (input, init) => {
    const response = await send(input, init);
    if (!response.ok) hint.retryAfterMs = retryAfterMsOf(response.headers);
    return response;
  };
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

/** Reads a failed attempt: HTTP status and google.rpc status, Retry-After or RetryInfo, the server's message. */
function describeFailure(err: unknown, hint: RetryHint): AttemptFailure {
  const status = httpStatus(err);
  const body = errorBody(err);
  const failure: AttemptFailure = {
    transient: status === undefined ? isNetworkFailure(err) : isTransientStatus(status),
    reason: body?.message ?? (err instanceof Error ? err.message : String(err)),
  };
  if (status !== undefined) failure.status = status;
  if (body?.status) failure.kind = body.status;
  const retryAfterMs = hint.retryAfterMs ?? retryInfoDelayMs(err);
  if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
  return failure;
}
