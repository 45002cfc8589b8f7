/**
 * AnthropicModel: the {@link Model} adapter over `@anthropic-ai/sdk`'s Messages API. Transient errors (429,
 * 408, 409, 5xx, 529 overloaded, network) are retried by the shared loop of retrying.ts; the SDK's own
 * retrying is off (`maxRetries: 0`) so that there is exactly one owner. The SDK is imported on the first call, not
 * with this file: a process whose apps use no Claude model never loads its ~270 modules.
 */
import type * as AnthropicSdk from '@anthropic-ai/sdk';
import type { Anthropic, ClientOptions } from '@anthropic-ai/sdk';
import { AgentloomError } from '../../core/errors.js';
import { EventAssembler, fromMessage, toAnthropicCall } from './anthropic-conversion.js';
import type { GenerateOptions, Model, ModelRequest, ModelResponse } from '../model.js';
import { patientFetch, type FetchFunction } from './patient-fetch.js';
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

/** Options of {@link AnthropicModel}. Nothing here is read from the environment (the config layer does that). */
export interface AnthropicModelOptions extends RetryOptions {
  /** Default model id, e.g. 'claude-sonnet-4-5' (a request's `model` overrides it). Also the adapter's name. */
  model: string;
  /** The API key (ANTHROPIC_API_KEY), sent by the SDK (1.x: as `Authorization: Bearer`). Required. */
  apiKey?: string;
  /** The API's base URL (ANTHROPIC_BASE_URL), e.g. a proxy. Default 'https://api.anthropic.com'. */
  baseURL?: string;
  /** `max_tokens` when `generateContentConfig` sets none (the API requires one). Default 4096. */
  maxTokens?: number;
  /** Headers sent with every request (e.g. an `anthropic-beta` flag). */
  defaultHeaders?: Record<string, string>;
  /** Per-attempt timeout in ms (the SDK's `timeout`). Default: the SDK's, 10 minutes. */
  timeoutMs?: number;
  /** A fetch to send requests with (tests, proxies). Default: Node's fetch without undici's 300 s timeouts. */
  fetch?: FetchFunction;
}

/** Error types of an `error` event inside a stream (no HTTP status) that another attempt may get past. */
const TRANSIENT_TYPES: ReadonlySet<string> = new Set([
  'overloaded_error',
  'api_error',
  'rate_limit_error',
  'timeout_error',
]);

/**
 * A Claude model behind Anthropic's Messages API, with its own bounded retries of transient errors.
 *
 * Reads from `generateContentConfig`: maxOutputTokens | maxTokens | max_tokens → max_tokens (default
 * {@link AnthropicModelOptions.maxTokens}); temperature; topP | top_p; topK | top_k; stopSequences |
 * stop_sequences | stop → stop_sequences; thinking (passed as it is; dropped with a responseSchema). Other keys
 * (Gemini’s own) are not sent.
 * `responseSchema` becomes a forced tool whose input is returned, JSON-stringified, as the answer's text.
 */
export class AnthropicModel implements Model {
  readonly name: string;
  readonly provider = 'Anthropic';
  /** The SDK client, made on the first call (see the file's comment). */
  #client: Promise<Anthropic> | undefined;
  readonly #clientOptions: ClientOptions;
  readonly #model: string;
  readonly #maxTokens: number;
  readonly #policy: RetryPolicy;
  readonly #secrets: readonly string[];

  /** @throws AgentloomError `CONFIG` when `apiKey` is missing. */
  constructor(options: AnthropicModelOptions) {
    if (!options.apiKey) {
      throw new AgentloomError(
        'CONFIG',
        `Anthropic model '${options.model}' needs an API key: set ANTHROPIC_API_KEY, or pass { apiKey } to ` +
          `new AnthropicModel(…).`,
        { details: { model: options.model } },
      );
    }
    this.name = options.model;
    this.#model = options.model;
    this.#maxTokens = options.maxTokens ?? 4096;
    this.#policy = resolveRetryPolicy(options);
    this.#secrets = [options.apiKey];
    // The key and base URL are given, so the SDK reads neither ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL.
    this.#clientOptions = {
      apiKey: options.apiKey,
      baseURL: options.baseURL || 'https://api.anthropic.com',
      webhookKey: null,
      maxRetries: 0,
      fetch: patientFetch(options.fetch),
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
      ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
    };
  }

  /** The SDK client, importing the SDK and making the client on first use (a failed import is tried again). */
  #clientOf(): Promise<Anthropic> {
    this.#client ??= loadSdk().then(({ Anthropic }) => new Anthropic(this.#clientOptions));
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  /**
   * One model call (streamed when `options.onPartial` is given), retried on transient errors.
   * @throws AgentloomError `CANCELLED` when `request.signal` aborts (the HTTP request is aborted too);
   *   `MODEL_ERROR` when the call fails for good (`retryable` says whether the last failure was transient;
   *   `details.status` is the HTTP status, if any) or the model wrote tool input that is not JSON.
   */
  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    const model = request.model ?? this.#model;
    const { body, structured } = toAnthropicCall(request, { model, defaultMaxTokens: this.#maxTokens });
    const ctx = { provider: this.provider, model, structured };
    const requestOptions = request.signal ? { signal: request.signal } : {};
    const onPartial = options?.onPartial;
    return callWithRetries({
      provider: this.provider,
      model,
      policy: this.#policy,
      signal: request.signal,
      sendLeased: options?.sendLeased,
      onRateLimited: options?.onRateLimited,
      secrets: this.#secrets,
      attempt: async () => {
        const client = await this.#clientOf();
        if (!onPartial) {
          return fromMessage(await client.messages.create({ ...body, stream: false }, requestOptions), ctx);
        }
        const stream = await client.messages.create({ ...body, stream: true }, requestOptions);
        const assembler = new EventAssembler(ctx, onPartial);
        for await (const event of stream) assembler.push(event);
        return assembler.finish();
      },
      describe: describeFailure,
    });
  }
}

/** The Anthropic SDK, once {@link loadSdk} has imported it: an error of its classes can only come after that. */
let sdk: typeof AnthropicSdk | undefined;

/** Imports the Anthropic SDK (once: the module cache answers again). */
async function loadSdk(): Promise<typeof AnthropicSdk> {
  sdk ??= await import('@anthropic-ai/sdk');
  return sdk;
}

/** Reads a failed attempt: status, Anthropic's error type and message, the retry hint. */
function describeFailure(err: unknown): AttemptFailure {
  const { APIConnectionError, APIError } = sdk ?? {};
  if (APIConnectionError && err instanceof APIConnectionError) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return { transient: true, reason: `${err.message}${cause}` };
  }
  if (APIError && err instanceof APIError) {
    const kind = err.type ?? undefined;
    const failure: AttemptFailure = {
      // A statusless APIError is an `error` event inside a stream (e.g. overloaded_error).
      transient:
        err.status === undefined
          ? kind !== undefined && TRANSIENT_TYPES.has(kind)
          : isTransientStatus(err.status),
      reason: err.apiMessage ?? err.message,
    };
    if (err.status !== undefined) failure.status = err.status;
    if (kind !== undefined) failure.kind = kind;
    const retryAfterMs = retryAfterMsOf(err.headers);
    if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
    return failure;
  }
  return { transient: isNetworkFailure(err), reason: err instanceof Error ? err.message : String(err) };
}
