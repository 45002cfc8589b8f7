/**
 * The options of `createEngine` (CONTRACT.md "engine") and the parts an engine runs on once they are resolved.
 * Types only.
 */
import type { Logger } from 'pino';
import type { Bus } from '../core/bus.js';
import type { Model } from '../models/model.js';
import type { PriceTable } from '../models/budget/pricing.js';
import type { ModelEnv } from '../models/model-ids.js';
import type { StepQueue } from '../queue/step-queue.js';
import type { ModelRateLimit, ModelRateLimiter } from '../queue/model-rate-limiter.js';
import type { Store } from '../store/store.js';
import type { Tool } from '../tools/tool.js';
import type { EngineObserver } from './observe/observer.js';
import type { RetentionSetting } from './runs/retention.js';
import type { RunTracing } from './observe/run-trace.js';
import type { CredentialVault } from './auth/credential-vault.js';
import type { DeclaredAuth } from './apps/registry.js';
import type { AppDefinition, RegisteredApp } from './apps/registry.js';
import type { BasePlugin } from '../plugins/base-plugin.js';
import type { PluginManager } from '../plugins/plugin-manager.js';

/** Where the queue lives: in this process, BullMQ on Redis, or BullMQ on PostgreSQL (CONTRACT.md `queue`). */
export type QueueOption =
  'local' | { redis: string; prefix?: string } | { postgres: string; prefix?: string } | StepQueue;

/** Options of {@link createEngine}. */
export interface EngineOptions {
  /** Apps in code, or the path of a module exporting `apps` (and optionally `tools`, `models`). */
  apps: AppDefinition[] | string;
  /** Default: $DATABASE_URL, else PGlite on disk under `.agentloom/data`. */
  database?: string | { pglite: string };
  /**
   * Default: `{ redis: $REDIS_URL }` when REDIS_URL is set and the database is PostgreSQL, else 'local'
   * (a PGlite database belongs to one process, so a shared queue would add nothing).
   */
  queue?: QueueOption;
  logger?: Logger;
  tools?: Record<string, Tool>;
  models?: Record<string, Model>;
  /**
   * The key that seals users' tool credentials at rest (32 random bytes as base64 or hex). Default:
   * $AGENTLOOM_SECRET_KEY. Required when a tool declares `auth`.
   */
  secretKey?: string;
  /**
   * Where users reach the HTTP API (e.g. `https://agents.example.com`); an OAuth2 provider sends them back to
   * `<publicUrl>/v1/auth/callback` unless a tool names its own redirect URI. Default: $AGENTLOOM_PUBLIC_URL.
   */
  publicUrl?: string;
  /** Gemini API key for models named by a Gemini id. Default: $GEMINI_API_KEY / $GOOGLE_API_KEY. */
  geminiApiKey?: string;
  /**
   * Keys and endpoints for models named by a provider id (`openai/gpt-4.1`, `anthropic/claude-sonnet-4-5`,
   * `ollama/llama3.2`, `azure/<deployment>`, `gemini-…`). Default: the environment's variables of the same names
   * (OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION,
   * OLLAMA_HOST, …). A worker whose apps name an id it cannot build refuses to start, naming the variable.
   */
  modelEnv?: ModelEnv;
  /**
   * Run steps in this process (default true, concurrency 64). `false`: a producer/reader only (an API process):
   * no worker and no reconciler.
   */
  worker?: boolean | { concurrency?: number };
  /** Lease of a running step; a step whose worker died is taken over after this. Default 15 000 ms. */
  leaseMs?: number;
  /** Default step deadline (an agent's `maxStepMs` overrides it). Default 600 000 ms (10 minutes). */
  maxStepMs?: number;
  /** Default LLM-call budget per invocation. Default 500. */
  maxLlmCalls?: number;
  /**
   * Model prices (USD per million input, output and cached input tokens) by model id or registered model name,
   * over the defaults of the providers we ship (README "Budgets"): what `costUsd` budgets count.
   */
  prices?: PriceTable;
  /**
   * Output tokens an agent's first model call of a run reserves under a budget when its request sets no
   * `maxOutputTokens` (later calls reserve the agent's largest call so far). Default 1024.
   */
  budgetOutputReservation?: number;
  /** Named fault points for durability tests: throw or hang to simulate a crash at that point. */
  faults?: (
    point: string,
    info: { invocationId: string; path: string; attempt: number },
  ) => void | Promise<void>;
  /** Look for lost work every this many ms (0 disables). Default: half the lease, at most 5 000. */
  reconcileIntervalMs?: number;
  /** A node is re-woken by the reconciler after showing no progress for this long. Default: the lease. */
  reconcileStaleMs?: number;
  /** Delay before a job of another definition of an app is offered again (rolling deploys). Default 5 000 ms. */
  deferMs?: number;
  /**
   * Delete ended runs older than this in the background (the workers, one process at a time, in small batches):
   * a duration (`'30d'`) or the options. Default: $AGENTLOOM_RETENTION, else runs are kept.
   */
  retention?: RetentionSetting;
  /** Called back when step jobs end and registered models and tools answer (metrics); see observer.ts. */
  observer?: EngineObserver;
  /**
   * Model rate limits shared by every worker (README "Rate limits"): by model id as agents name it
   * (`openai/gpt-4.1`), provider (`openai`: its models together) or `*` (every model),
   * `{ requestsPerMinute?, tokensPerMinute?, concurrency?, perApp?: { … } }`. Kept in Redis with a Redis queue,
   * else in PostgreSQL, else in memory. A step that must wait gives back its worker and lease and runs again
   * after the wait; a provider's 429 with retry-after makes every worker wait. Default: none.
   */
  rateLimits?: Record<string, ModelRateLimit>;
  /**
   * Record prompts, answers and tool arguments on spans (README "Tracing"). Default:
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. Spans are made only when an OpenTelemetry SDK was
   * registered before the engine was created.
   */
  traceContent?: boolean;
  /**
   * ADK plugins (README "Plugins"): BasePlugin instances applied to every agent, model call, tool call, event and run
   * of every app, in this order, before the agents' own callbacks; an apps module's `plugins` export follows them.
   * A plugin named twice, or with a method ending in `Callback` that is no BasePlugin callback, is refused here.
   */
  plugins?: readonly BasePlugin[];
}

/** The parts an engine runs on, resolved from {@link EngineOptions} by `createEngine`. */
export interface EngineParts {
  store: Store;
  queue: StepQueue;
  bus: Bus;
  apps: ReadonlyMap<string, RegisteredApp>;
  logger: Logger;
  models: Map<string, Model>;
  tools: Map<string, Tool>;
  /** Keys and endpoints for models named by a provider id (see {@link EngineOptions.modelEnv}). */
  modelEnv: ModelEnv;
  /** Users' tool credentials, when the deployment has a secret key. */
  vault: CredentialVault | undefined;
  /** The `auth` the apps' tools declare (where an OAuth2 answer's token URL and client come from). */
  auths: DeclaredAuth[];
  /** The tracing of runs, when an OpenTelemetry SDK was registered before the engine was made. */
  tracing: RunTracing | undefined;
  /** The plugins of `plugins` and the apps module's, checked (undefined: none). */
  plugins: PluginManager | undefined;
  /** The shared model rate limits (`rateLimits`), and how to close their connection. */
  rateLimiter?: { limiter: ModelRateLimiter; close: () => Promise<void> };
}
