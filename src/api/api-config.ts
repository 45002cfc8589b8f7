/**
 * Configuration of `agentloom api`: flags, then environment, parsed once by one zod schema into a frozen object;
 * every bad setting is reported at once, each naming the flag or variable and what to write instead.
 */
import { z } from 'zod';
import { AgentloomError } from '../core/errors.js';
import { loadEnv, type EnvConfig } from '../config/env.js';
import { parseApiKeys, type ApiKey } from './auth.js';

/** Flags of `agentloom api` as commander gives them (strings). */
export interface ApiFlags {
  port?: string;
  apps?: string;
  queue?: string;
}

const apiSchema = z
  .object({
    apps: z
      .string({
        error:
          'set --apps PATH or AGENTLOOM_APPS: the apps module (or YAML) the workers serve; the API needs it to accept invocations',
      })
      .min(1),
    databaseUrl: z.string({
      error:
        'the API runs on PostgreSQL: set DATABASE_URL=postgres://… (for an embedded engine with its API use `agentloom dev`)',
    }),
    queue: z.enum(['redis', 'postgres'], { error: "--queue must be 'redis' or 'postgres'" }),
    redisUrl: z.string().optional(),
    prefix: z.string().optional(),
    port: z.coerce
      .number({ error: '--port / PORT must be a number' })
      .int('--port / PORT must be a whole number')
      .min(0, '--port / PORT must be between 0 and 65535')
      .max(65535, '--port / PORT must be between 0 and 65535'),
    apiKeys: z.string().superRefine((spec, ctx) => {
      try {
        parseApiKeys(spec);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
    logLevel: z.string(),
  })
  .superRefine((config, ctx) => {
    if (config.queue === 'redis' && !config.redisUrl) {
      ctx.addIssue({
        code: 'custom',
        path: ['redisUrl'],
        message: 'the redis queue needs REDIS_URL=redis://…; or run without Redis with --queue postgres',
      });
    }
  });

/** The resolved configuration of an API process. */
export type ApiConfig = Readonly<Omit<z.infer<typeof apiSchema>, 'apiKeys'> & { apiKeys: readonly ApiKey[] }>;

/** Resolves flags and environment into an {@link ApiConfig}; throws CONFIG listing every problem. */
export function apiConfig(flags: ApiFlags, env: EnvConfig = loadEnv()): ApiConfig {
  const parsed = apiSchema.safeParse({
    apps: flags.apps ?? env.AGENTLOOM_APPS,
    databaseUrl: env.DATABASE_URL,
    queue: flags.queue ?? 'redis',
    redisUrl: env.REDIS_URL,
    prefix: env.AGENTLOOM_QUEUE_PREFIX,
    port: flags.port ?? env.PORT ?? 8080,
    apiKeys: env.AGENTLOOM_API_KEYS ?? '',
    logLevel: env.LOG_LEVEL ?? 'info',
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => i.message).join('; ');
    throw new AgentloomError('CONFIG', `agentloom api: ${problems}`, {
      details: { fields: parsed.error.issues.map((i) => i.path.join('.')) },
    });
  }
  return Object.freeze({ ...parsed.data, apiKeys: parseApiKeys(parsed.data.apiKeys) });
}
