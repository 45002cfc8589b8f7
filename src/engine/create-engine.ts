/**
 * `createEngine`: the one place where an engine's parts are chosen and wired — the store (PostgreSQL or
 * PGlite), the queue (in-process, BullMQ on Redis, BullMQ on PostgreSQL) and the bus between processes (Redis
 * pub/sub, Postgres LISTEN/NOTIFY, or in-process). The BullMQ queue, the Redis bus and the rate limiter are imported
 * when chosen: an engine on PGlite and the in-process queue never loads bullmq, ioredis or rate-limiter-flexible.
 */
import { parse as parseConnectionString } from 'pg-connection-string';
import { RunTracing, traceLogFields } from './observe/run-trace.js';
import { pino, type Logger } from 'pino';
import { LOG_REDACTION } from '../core/log-redaction.js';
import { InProcessBus, type Bus } from '../core/bus.js';
import { AgentloomError } from '../core/errors.js';
import { loadEnv, type EnvConfig } from '../config/env.js';
import { resolveRetention } from './runs/retention.js';
import type { ModelEnv } from '../models/model-ids.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import type { StepQueue } from '../queue/step-queue.js';
import type { ModelRateLimiter } from '../queue/model-rate-limiter.js';
import { validateRateLimits, type ModelRateLimit } from '../queue/rate-limits.js';
import { expireAllLeases } from '../store/repos/nodes.js';
import { NotifyBus } from '../store/notify-bus.js';
import { createResilientPool } from '../store/db/pg-pool.js';
import { Store } from '../store/store.js';
import { loadAppsModule } from './apps/apps-module.js';
import { buildProviderModels } from './apps/provider-models.js';
import { Engine } from './engine.js';
import type { EngineOptions, QueueOption } from './engine-options.js';
import { validatePriceTable } from '../models/budget/pricing.js';
import { authToolsOf, checkDeclaredAuths, declaredAuths, registerApps } from './apps/registry.js';
import { redirectUriOf } from './auth/oauth2.js';
import { oauthFlow } from '../tools/auth.js';
import { CredentialVault, missingSecretKey } from './auth/credential-vault.js';
import { parseSecretKey, SecretBox } from '../core/secret-box.js';
import { PluginManager } from '../plugins/plugin-manager.js';
import { LoggingPlugin } from '../plugins/logging-plugin.js';

const QUEUE_HINT =
  "queue must be 'local', { redis: 'redis://…' }, { postgres: 'postgres://…' } or a StepQueue instance";

/**
 * Whether two PostgreSQL URLs name one database (host, port, database and user alike, defaults filled in): then
 * the queue's jobs can be added by the store's own statements.
 */
export function sameDatabase(a: string, b: string): boolean {
  const key = (url: string): string | undefined => {
    if (!/^(postgres(ql)?|socket):/i.test(url)) return undefined;
    try {
      const c = parseConnectionString(url);
      const user = c.user ?? '';
      return JSON.stringify([c.host || 'localhost', c.port || '5432', c.database || user, user]);
    } catch {
      return undefined;
    }
  };
  const ka = key(a);
  return ka !== undefined && ka === key(b);
}

async function resolveQueue(
  option: QueueOption | undefined,
  store: Store,
  storeUrl: string | undefined,
  leaseMs: number,
  logger: Logger,
): Promise<{ queue: StepQueue; bus: Bus }> {
  const env = loadEnv();
  const onError = (err: unknown, job?: { invocationId: string; path: string }) =>
    logger.warn({ err, invocationId: job?.invocationId, nodePath: job?.path }, 'queue error');
  // A PGlite database belongs to one process: a shared queue would add nothing, so REDIS_URL is not applied.
  const chosen =
    option ?? (env.REDIS_URL && store.database.kind === 'postgres' ? { redis: env.REDIS_URL } : 'local');
  const notifyBus = () =>
    store.database.kind === 'postgres'
      ? new NotifyBus(store, {
          onDropped: (topic, bytes) => logger.debug({ topic, bytes }, 'bus message too large'),
        })
      : new InProcessBus();
  if (chosen === 'local') {
    return {
      queue: new InProcessQueue({
        onError: (err, job) =>
          logger.warn(
            { err, invocationId: job.invocationId, nodePath: job.path },
            'step failed; redelivering',
          ),
      }),
      bus: notifyBus(),
    };
  }
  if (typeof chosen !== 'object' || chosen === null) {
    throw new AgentloomError('CONFIG', `${QUEUE_HINT}; got ${JSON.stringify(chosen)}`, {
      details: { field: 'queue' },
    });
  }
  // A StepQueue of the caller's own (before the option shapes: BullmqQueue, for one, has a `redis` field).
  if (typeof (chosen as StepQueue).enqueue === 'function')
    return { queue: chosen as StepQueue, bus: notifyBus() };
  if ('redis' in chosen) {
    if (typeof chosen.redis !== 'string' || !/^rediss?:\/\//.test(chosen.redis)) {
      throw new AgentloomError(
        'CONFIG',
        `queue.redis must be a redis:// URL; got ${JSON.stringify(chosen.redis)}`,
        {
          details: { field: 'queue.redis' },
        },
      );
    }
    const prefix = chosen.prefix;
    const [{ BullmqQueue }, { RedisBus }] = await Promise.all([
      import('../queue/bullmq-queue.js'),
      import('../queue/bus.js'),
    ]);
    return {
      queue: new BullmqQueue({ connection: { redis: chosen.redis }, prefix, leaseMs, onError }),
      bus: new RedisBus({ url: chosen.redis, prefix, onError: (err) => onError(err) }),
    };
  }
  if ('postgres' in chosen) {
    if (typeof chosen.postgres !== 'string' || !/^postgres(ql)?:\/\//.test(chosen.postgres)) {
      throw new AgentloomError(
        'CONFIG',
        `queue.postgres must be a postgres:// URL; got ${JSON.stringify(chosen.postgres)}`,
        { details: { field: 'queue.postgres' } },
      );
    }
    const { BULLMQ_PG_SCHEMA, BullmqQueue } = await import('../queue/bullmq-queue.js');
    return {
      queue: new BullmqQueue({
        // A pool that survives a server restart (BullMQ's own would crash the process on one). Its commits do not
        // wait for the disk: a job is a wake-up, and one a server crash loses is re-woken by the reconciler from
        // the nodes, as when Redis is wiped (ARCHITECTURE "Failure model").
        connection: {
          postgres: createResilientPool(chosen.postgres, 20, {
            searchPath: BULLMQ_PG_SCHEMA,
            asyncCommit: true,
          }),
        },
        prefix: chosen.prefix,
        leaseMs,
        onError,
        jobsInStoreStatements: storeUrl !== undefined && sameDatabase(chosen.postgres, storeUrl),
      }),
      bus: notifyBus(),
    };
  }
  throw new AgentloomError('CONFIG', QUEUE_HINT, { details: { field: 'queue' } });
}

function checkPositive(value: number | undefined, field: string, example: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new AgentloomError(
      'CONFIG',
      `${field} must be a positive number of milliseconds, e.g. ${example}`,
      {
        details: { field },
      },
    );
  }
}

/**
 * Creates an engine (PGlite + in-process queue unless told otherwise) and, unless `worker: false`, starts its
 * worker and reconciler.
 */
export async function createEngine(options: EngineOptions): Promise<Engine> {
  const env = loadEnv();
  checkPositive(options.leaseMs, 'leaseMs', '15000');
  checkPositive(options.maxStepMs, 'maxStepMs', '600000');
  if (options.prices !== undefined) validatePriceTable(options.prices);
  const reservation = options.budgetOutputReservation;
  if (reservation !== undefined && !(Number.isInteger(reservation) && reservation >= 0)) {
    throw new AgentloomError(
      'CONFIG',
      'budgetOutputReservation must be a whole number of tokens ≥ 0, e.g. 4096',
      {
        details: { field: 'budgetOutputReservation' },
      },
    );
  }
  // YAML apps check the tool and model names they use against the registries given here.
  const loaded =
    typeof options.apps === 'string'
      ? await loadAppsModule(options.apps, { tools: options.tools, models: options.models })
      : undefined;
  const apps = registerApps(loaded?.apps ?? (options.apps as Exclude<EngineOptions['apps'], string>) ?? []);
  // Checked before anything is opened: a plugin named twice or a misspelt callback stops the engine here.
  const own: unknown = options.plugins ?? [];
  const pluginList = Array.isArray(own) ? [...(own as unknown[]), ...(loaded?.plugins ?? [])] : own;
  const plugins = new PluginManager(pluginList as unknown[]);
  const logger =
    options.logger ?? pino({ level: env.LOG_LEVEL ?? 'warn', redact: LOG_REDACTION, mixin: traceLogFields });
  // A LoggingPlugin without a logger of its own logs through the engine's.
  for (const plugin of plugins.plugins) if (plugin instanceof LoggingPlugin) plugin.useEngineLogger(logger);
  const secretKey = options.secretKey ?? env.AGENTLOOM_SECRET_KEY;
  const vault = secretKey
    ? new CredentialVault(
        new SecretBox(parseSecretKey(secretKey)),
        options.publicUrl ?? env.AGENTLOOM_PUBLIC_URL,
      )
    : undefined;
  const tools = new Map(Object.entries({ ...loaded?.tools, ...options.tools }));
  const auths = declaredAuths(apps.values(), tools.values());
  checkDeclaredAuths(auths, apps.values());
  // An authorization-code tool with nowhere to send the user back is a deployment error, found at start.
  for (const { auth } of auths)
    if (oauthFlow(auth) === 'authorizationCode') redirectUriOf(auth, vault?.publicUrl);
  if (!vault) {
    const gated = authToolsOf(apps.values(), tools.values());
    if (gated.length > 0) {
      const err = missingSecretKey();
      err.message = `tool ${gated.map((t) => `"${t}"`).join(', ')} declares auth: ${err.message}`;
      throw err;
    }
  }
  const models = new Map(Object.entries({ ...loaded?.models, ...options.models }));
  const modelEnv = options.modelEnv ?? modelEnvOf(env, options.geminiApiKey);
  // A worker builds the provider models its apps name now: a missing key stops it here, naming the variable.
  if ((options.worker ?? true) !== false) {
    for (const [id, model] of buildProviderModels(apps.values(), models, modelEnv)) models.set(id, model);
  }
  const retention = options.retention ?? env.AGENTLOOM_RETENTION;
  // A bad retention is a start-up error, before anything is opened.
  if (retention !== undefined) resolveRetention(retention);
  // Bad rate limits too: the error names the field (`rateLimits["openai/gpt-4.1"].concurrency`).
  if (options.rateLimits !== undefined) validateRateLimits(options.rateLimits);
  const fromEnv = rateLimitsOfEnv(env.AGENTLOOM_RATE_LIMITS);
  const rateLimits =
    fromEnv || loaded?.rateLimits || options.rateLimits
      ? { ...fromEnv, ...loaded?.rateLimits, ...options.rateLimits }
      : undefined;
  const target = options.database ?? env.DATABASE_URL ?? { pglite: '.agentloom/data' };
  const store = await Store.open(target, typeof target === 'string' ? { poolSize: 20 } : { logger });
  let parts: { queue: StepQueue; bus: Bus };
  try {
    parts = await resolveQueue(
      options.queue,
      store,
      typeof target === 'string' ? target : undefined,
      options.leaseMs ?? 15_000,
      logger,
    );
  } catch (err) {
    await store.close();
    throw err;
  }
  const rateLimiter = rateLimits
    ? await rateLimiterOf(rateLimits, options.queue, store, options.maxStepMs)
    : undefined;
  const engine = new Engine(
    {
      store,
      ...parts,
      ...(rateLimiter ? { rateLimiter } : {}),
      apps,
      logger,
      models,
      tools,
      vault,
      auths,
      modelEnv,
      plugins: plugins.plugins.length > 0 ? plugins : undefined,
      tracing: RunTracing.sdkRegistered()
        ? new RunTracing(
            options.traceContent ?? env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === true,
          )
        : undefined,
    },
    retention === undefined ? options : { ...options, retention },
  );
  const worker = options.worker ?? true;
  if (worker === false) return engine;
  // An embedded engine owns its PGlite directory: any lease in it belongs to a process that is gone.
  const embedded = store.database.kind === 'pglite';
  if (embedded) await expireAllLeases(store.db);
  await engine.startWorker(typeof worker === 'object' ? worker : {});
  // At start, an embedded engine runs everything left runnable at once; a worker among others leaves recent
  // work to its owners and the periodic pass.
  await engine.reconcile(embedded ? { staleMs: 0 } : {});
  return engine;
}

/** AGENTLOOM_RATE_LIMITS (JSON), checked: the error names the variable and says what to write. */
export function rateLimitsOfEnv(json: string | undefined): Record<string, ModelRateLimit> | undefined {
  if (json === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new AgentloomError(
      'CONFIG',
      `AGENTLOOM_RATE_LIMITS must be JSON, e.g. AGENTLOOM_RATE_LIMITS='{"openai/gpt-4.1":{"requestsPerMinute":60}}'`,
      { details: { field: 'AGENTLOOM_RATE_LIMITS' } },
    );
  }
  return validateRateLimits(value, 'AGENTLOOM_RATE_LIMITS');
}

/**
 * The shared rate limiter of `rateLimits`: on the queue's Redis (its prefix) when the queue is on Redis, else in
 * the PostgreSQL database, else (PGlite: one process) in memory.
 */
async function rateLimiterOf(
  limits: Record<string, ModelRateLimit>,
  queue: QueueOption | undefined,
  store: Store,
  maxStepMs: number | undefined,
): Promise<{ limiter: ModelRateLimiter; close: () => Promise<void> }> {
  const { openModelRateLimiter } = await import('../queue/model-rate-limiter.js');
  const env = loadEnv();
  const chosen =
    queue ?? (env.REDIS_URL && store.database.kind === 'postgres' ? { redis: env.REDIS_URL } : 'local');
  const redis = typeof chosen === 'object' && 'redis' in chosen ? chosen : undefined;
  const prefix = typeof chosen === 'object' && 'prefix' in chosen ? chosen.prefix : undefined;
  return openModelRateLimiter(limits, {
    ...(redis ? { redisUrl: redis.redis } : store.database.pool ? { postgres: store.database.pool } : {}),
    ...(prefix ? { prefix } : {}),
    // No model call outlives its step: a slot of a worker that died is free by then.
    slotTtlMs: maxStepMs ?? 600_000,
  });
}

/** The provider keys and endpoints of the environment (`geminiApiKey`, when given, is Gemini's key). */
function modelEnvOf(env: EnvConfig, geminiApiKey: string | undefined): ModelEnv {
  return {
    OPENAI_API_KEY: env.OPENAI_API_KEY,
    OPENAI_BASE_URL: env.OPENAI_BASE_URL,
    OPENAI_API_VERSION: env.OPENAI_API_VERSION,
    ANTHROPIC_API_KEY: env.ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL: env.ANTHROPIC_BASE_URL,
    AZURE_OPENAI_API_KEY: env.AZURE_OPENAI_API_KEY,
    AZURE_OPENAI_ENDPOINT: env.AZURE_OPENAI_ENDPOINT,
    OLLAMA_HOST: env.OLLAMA_HOST,
    GEMINI_API_KEY: geminiApiKey ?? env.GEMINI_API_KEY,
    GOOGLE_API_KEY: env.GOOGLE_API_KEY,
  };
}
