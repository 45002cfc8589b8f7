/**
 * OpenAIModel: the {@link Model} adapter over the official `openai` SDK's Chat Completions. One class serves
 * OpenAI, Azure OpenAI (the SDK's `AzureOpenAI` client, when `azure` is given) and OpenAI-compatible servers
 * such as Ollama and vLLM (through `baseURL`). Transient errors are retried by the shared loop of retrying.ts;
 * the SDK's own retrying is off (`maxRetries: 0`) so that there is exactly one owner. The SDK is imported on the
 * first call, not with this file: a process whose apps use no OpenAI model never loads its ~150 modules.
 */
import type * as OpenAISdk from 'openai';
import type { OpenAI } from 'openai';
import { AgentloomError } from '../../core/errors.js';
import type { GenerateOptions, Model, ModelRequest, ModelResponse } from '../model.js';
import { ChunkAssembler, fromCompletion, toChatBody, type MaxTokensField } from './openai-conversion.js';
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

/** Where an Azure OpenAI deployment lives. */
export interface AzureOpenAIOptions {
  /** The resource endpoint, e.g. 'https://my-resource.openai.azure.com' (AZURE_OPENAI_ENDPOINT). */
  endpoint: string;
  /** The API version, e.g. '2024-10-21' (OPENAI_API_VERSION); sent as the `api-version` query parameter. */
  apiVersion: string;
  /** The deployment name; defaults to `model`. Requests go to `/openai/deployments/{deployment}/…`. */
  deployment?: string;
}

/** Options of {@link OpenAIModel}. Nothing here is read from the environment (the config layer does that). */
export interface OpenAIModelOptions extends RetryOptions {
  /** Default model id, e.g. 'gpt-4.1' or 'llama3.2' (a request's `model` overrides it). Also the adapter's name. */
  model: string;
  /**
   * The API key (OPENAI_API_KEY; for Azure AZURE_OPENAI_API_KEY, sent as the `api-key` header). Required for
   * OpenAI and Azure; with a custom `baseURL` (Ollama, vLLM) a placeholder is sent when none is given.
   */
  apiKey?: string;
  /** An OpenAI-compatible server, e.g. 'http://localhost:11434/v1' (Ollama). Default 'https://api.openai.com/v1'. */
  baseURL?: string;
  /** OpenAI organization and project ids (sent as headers); not read from OPENAI_ORG_ID / OPENAI_PROJECT_ID. */
  organization?: string;
  project?: string;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string>;
  /** Use Azure OpenAI (the SDK's `AzureOpenAI` client) at this endpoint instead of `baseURL`. */
  azure?: AzureOpenAIOptions;
  /** Per-attempt timeout in ms (the SDK's `timeout`). Default: the SDK's, 10 minutes. */
  timeoutMs?: number;
  /** A fetch to send requests with (tests, proxies). Default: Node's fetch without undici's 300 s timeouts. */
  fetch?: FetchFunction;
  /**
   * The field of the output-token limit (`maxOutputTokens` in `generateContentConfig`). Default
   * 'max_completion_tokens' (OpenAI's current field, required by its reasoning models); 'max_tokens' for servers
   * that know only the older one (Ollama).
   */
  maxTokensField?: MaxTokensField;
  /** Ask for OpenAI's strict structured output (every property required, no extras). Default false. */
  strictSchema?: boolean;
  /** The provider's name in errors. Default 'OpenAI', or 'Azure OpenAI' with `azure`. */
  provider?: string;
}

/** A placeholder key for OpenAI-compatible servers that want none (the SDK refuses to start without one). */
const NO_KEY = 'unused';

/**
 * A model behind OpenAI's Chat Completions API, with its own bounded retries of transient errors.
 *
 * Reads from `generateContentConfig`: temperature; topP | top_p; maxOutputTokens | maxTokens | max_tokens |
 * max_completion_tokens (sent as {@link OpenAIModelOptions.maxTokensField}, or as `max_tokens` when written so);
 * stopSequences | stop_sequences | stop → stop; seed; presencePenalty | presence_penalty; frequencyPenalty |
 * frequency_penalty; reasoningEffort | reasoning_effort. Other keys (Gemini's own) are not sent.
 */
export class OpenAIModel implements Model {
  readonly name: string;
  /** The provider's name in errors ('OpenAI', 'Azure OpenAI', 'Ollama', …). */
  readonly provider: string;
  /** The SDK client, made on the first call (see the file's comment). */
  #client: Promise<OpenAI> | undefined;
  readonly #clientOptions: ReturnType<typeof clientOptionsOf>;
  readonly #baseURL: string;
  readonly #azure: AzureOpenAIOptions | undefined;
  readonly #model: string;
  readonly #policy: RetryPolicy;
  readonly #secrets: readonly string[];
  readonly #maxTokensField: MaxTokensField;
  readonly #strictSchema: boolean;

  /** @throws AgentloomError `CONFIG` when the API key is missing for OpenAI or Azure. */
  constructor(options: OpenAIModelOptions) {
    this.provider = options.provider ?? (options.azure ? 'Azure OpenAI' : 'OpenAI');
    const apiKey = options.apiKey || (options.baseURL && !options.azure ? NO_KEY : undefined);
    if (!apiKey) {
      const variable = options.azure ? 'AZURE_OPENAI_API_KEY' : 'OPENAI_API_KEY';
      throw new AgentloomError(
        'CONFIG',
        `${this.provider} model '${options.model}' needs an API key: set ${variable}, or pass { apiKey } to ` +
          `new OpenAIModel(…).`,
        { details: { model: options.model } },
      );
    }
    this.name = options.model;
    this.#model = options.model;
    this.#policy = resolveRetryPolicy(options);
    this.#secrets = apiKey === NO_KEY ? [] : [apiKey];
    this.#maxTokensField = options.maxTokensField ?? 'max_completion_tokens';
    this.#strictSchema = options.strictSchema ?? false;
    this.#clientOptions = clientOptionsOf(options, apiKey);
    this.#baseURL = options.baseURL || 'https://api.openai.com/v1';
    this.#azure = options.azure;
  }

  /** The SDK client, importing the SDK and making the client on first use (a failed import is tried again). */
  #clientOf(): Promise<OpenAI> {
    this.#client ??= loadSdk().then(({ AzureOpenAI, OpenAI }) => {
      const azure = this.#azure;
      return azure
        ? new AzureOpenAI({
            ...this.#clientOptions,
            baseURL: null,
            endpoint: azure.endpoint,
            apiVersion: azure.apiVersion,
            deployment: azure.deployment ?? this.#model,
          })
        : new OpenAI({ ...this.#clientOptions, baseURL: this.#baseURL });
    });
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  /**
   * One model call (streamed when `options.onPartial` is given), retried on transient errors.
   * @throws AgentloomError `CANCELLED` when `request.signal` aborts (the HTTP request is aborted too);
   *   `MODEL_ERROR` when the call fails for good (`retryable` says whether the last failure was transient;
   *   `details.status` is the HTTP status, if any) or the model wrote tool arguments that are not JSON.
   */
  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    const model = request.model ?? this.#model;
    const ctx = { provider: this.provider, model };
    const body = toChatBody(request, {
      model,
      maxTokensField: this.#maxTokensField,
      strictSchema: this.#strictSchema,
    });
    const requestOptions = request.signal ? { signal: request.signal } : {};
    const onPartial = options?.onPartial;
    return callWithRetries({
      ...ctx,
      policy: this.#policy,
      signal: request.signal,
      sendLeased: options?.sendLeased,
      onRateLimited: options?.onRateLimited,
      secrets: this.#secrets,
      attempt: async () => {
        const client = await this.#clientOf();
        if (!onPartial) {
          return fromCompletion(
            await client.chat.completions.create({ ...body, stream: false }, requestOptions),
            ctx,
          );
        }
        const stream = await client.chat.completions.create(
          { ...body, stream: true, stream_options: { include_usage: true } },
          requestOptions,
        );
        const assembler = new ChunkAssembler(ctx, onPartial);
        for await (const chunk of stream) assembler.push(chunk);
        return assembler.finish();
      },
      describe: describeFailure,
    });
  }
}

/** What both clients (OpenAI, AzureOpenAI) are made with, but the endpoint. */
function clientOptionsOf(options: OpenAIModelOptions, apiKey: string) {
  // Every option the SDK would otherwise read from process.env is given (null = none): config reads the env.
  return {
    apiKey,
    organization: options.organization ?? null,
    project: options.project ?? null,
    adminAPIKey: null,
    webhookSecret: null,
    maxRetries: 0,
    fetch: patientFetch(options.fetch),
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
  };
}

/** OpenAI's error body (`{"error":{message,type,param,code}}`), as the SDK keeps it in `APIError.error`. */
interface OpenAIErrorBody {
  message?: unknown;
  type?: unknown;
  code?: unknown;
}

/** The `openai` SDK, once {@link loadSdk} has imported it: an error of its classes can only come after that. */
let sdk: typeof OpenAISdk | undefined;

/** Imports the `openai` SDK (once: the module cache answers again). */
async function loadSdk(): Promise<typeof OpenAISdk> {
  sdk ??= await import('openai');
  return sdk;
}

/** Reads a failed attempt: status, OpenAI's error type and message, the retry hint. */
function describeFailure(err: unknown): AttemptFailure {
  const { APIConnectionError, APIError } = sdk ?? {};
  if (APIConnectionError && err instanceof APIConnectionError) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return { transient: true, reason: `${err.message}${cause}` };
  }
  if (APIError && err instanceof APIError) {
    const body = (err.error ?? {}) as OpenAIErrorBody;
    const kind =
      typeof body.type === 'string' ? body.type : typeof body.code === 'string' ? body.code : undefined;
    const failure: AttemptFailure = {
      // A statusless APIError is an error event inside a stream: retried when it is the server's fault.
      transient: err.status === undefined ? kind === 'server_error' : isTransientStatus(err.status),
      reason: typeof body.message === 'string' ? body.message : err.message,
    };
    if (err.status !== undefined) failure.status = err.status;
    if (kind !== undefined) failure.kind = kind;
    const retryAfterMs = retryAfterMsOf(err.headers);
    if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
    return failure;
  }
  return { transient: isNetworkFailure(err), reason: err instanceof Error ? err.message : String(err) };
}
