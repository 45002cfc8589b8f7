/**
 * Configuration from the environment, parsed once into a frozen object. Nothing else reads process.env.
 */
import * as z from 'zod';
import { AgentloomError } from '../core/errors.js';

const httpUrl = (name: string, example: string) =>
  z
    .string()
    .regex(/^https?:\/\/[^\s]+$/, `must be an http:// or https:// URL, e.g. ${name}=${example}`)
    .optional();

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional(),
  AGENTLOOM_APPS: z.string().optional(),
  AGENTLOOM_LEASE_MS: z.coerce.number().int().min(100, 'must be at least 100 (ms)').optional(),
  AGENTLOOM_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'use letters, digits, _ and - (it names the queue)')
    .optional(),
  AGENTLOOM_API_KEYS: z.string().optional(),
  /** Port of a worker's Prometheus endpoint (`agentloom worker --metrics-port`). */
  AGENTLOOM_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Where the CLI's client commands reach the API (default http://127.0.0.1:8080). */
  AGENTLOOM_URL: z
    .string()
    .regex(/^https?:\/\/[^\s]+$/, 'must be an http:// or https:// URL, e.g. http://127.0.0.1:8080')
    .optional(),
  /** The key the CLI's client commands send as `Authorization: Bearer …`. */
  AGENTLOOM_API_KEY: z.string().min(1).optional(),
  GEMINI_API_KEY: z.string().min(1).optional(),
  /** 32 random bytes (base64 or hex) that seal users' tool credentials at rest (the auth gate). */
  AGENTLOOM_SECRET_KEY: z.string().min(1).optional(),
  AGENTLOOM_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'AGENTLOOM_PUBLIC_URL must be an http(s) URL' })
    .optional(),
  GOOGLE_API_KEY: z.string().min(1).optional(),
  /** Keys and endpoints of the model providers (the vendors' SDKs' own variables; see README "Models"). */
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: httpUrl('OPENAI_BASE_URL', 'https://api.openai.com/v1'),
  OPENAI_API_VERSION: z.string().min(1).optional(),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: httpUrl('ANTHROPIC_BASE_URL', 'https://api.anthropic.com'),
  AZURE_OPENAI_API_KEY: z.string().min(1).optional(),
  AZURE_OPENAI_ENDPOINT: httpUrl('AZURE_OPENAI_ENDPOINT', 'https://my-resource.openai.azure.com'),
  /** Ollama's address; like Ollama itself, a host:port without a scheme is accepted. */
  OLLAMA_HOST: z.string().min(1).optional(),
  /** Model rate limits shared by the workers, as JSON (createEngine's `rateLimits`; README "Rate limits"). */
  AGENTLOOM_RATE_LIMITS: z.string().min(1).optional(),
  /** Delete ended runs older than this in the background (a duration: `30d`, `12h`); unset keeps them. */
  AGENTLOOM_RETENTION: z
    .string()
    .regex(/^\s*\d+(\.\d+)?\s*[a-zA-Z]+\s*$/, 'must be a duration with a unit, e.g. AGENTLOOM_RETENTION=30d')
    .optional(),
  /**
   * OpenTelemetry's standard variables that switch tracing on in `agentloom api|worker|dev` (README "Tracing");
   * the SDK reads the others (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_PROTOCOL, headers).
   */
  OTEL_TRACES_EXPORTER: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', 'http://localhost:4318'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl(
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'http://localhost:4318/v1/traces',
  ),
  OTEL_TRACES_SAMPLER: z
    .enum(
      [
        'always_on',
        'always_off',
        'traceidratio',
        'parentbased_always_on',
        'parentbased_always_off',
        'parentbased_traceidratio',
      ],
      {
        error:
          'must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio',
      },
    )
    .optional(),
  OTEL_TRACES_SAMPLER_ARG: z.coerce
    .number({ error: 'must be a ratio between 0 and 1, e.g. OTEL_TRACES_SAMPLER_ARG=0.1' })
    .min(0, 'must be a ratio between 0 and 1')
    .max(1, 'must be a ratio between 0 and 1')
    .optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  /** OpenTelemetry's GenAI switch: record prompts, answers and tool arguments on spans (README "Tracing"). */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z
    .enum(['true', 'false', 'TRUE', 'FALSE', 'True', 'False'], { error: 'must be true or false' })
    .transform((v) => v.toLowerCase() === 'true')
    .optional(),
  /** The console's link to a run's trace: a URL template with {traceId}, e.g. http://jaeger:16686/trace/{traceId}. */
  AGENTLOOM_TRACE_URL: z
    .string()
    .regex(
      /^https?:\/\/\S*\{traceId\}\S*$/,
      'must be an http(s) URL containing {traceId}, e.g. http://jaeger:16686/trace/{traceId}',
    )
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  /**
   * `off`: a new PGlite database runs initdb instead of starting from the cached template (default `on`; see
   * store/db/pglite-template.ts).
   */
  AGENTLOOM_PGLITE_TEMPLATE: z
    .enum(['on', 'off'], { error: 'must be on or off, e.g. AGENTLOOM_PGLITE_TEMPLATE=off' })
    .optional(),
  /** The per-user cache root (XDG Base Directory): PGlite templates go under `$XDG_CACHE_HOME/agentloom`. */
  XDG_CACHE_HOME: z.string().optional(),
  PORT: z.coerce.number().int().min(1).max(65535).optional(),
});

/** The environment agentloom reads. */
export type EnvConfig = Readonly<z.infer<typeof envSchema>>;

let cached: EnvConfig | undefined;

/** Parses the environment (once); throws CONFIG listing every bad variable. */
export function loadEnv(env: NodeJS.ProcessEnv = process.env): EnvConfig {
  if (cached && env === process.env) return cached;
  const relevant = Object.fromEntries(
    Object.keys(envSchema.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]),
  );
  const parsed = envSchema.safeParse(relevant);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new AgentloomError('CONFIG', `invalid environment: ${problems}`);
  }
  const config = Object.freeze(parsed.data);
  if (env === process.env) cached = config;
  return config;
}
