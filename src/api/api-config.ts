/**
 * Configuration of `agentloom api`: flags, then environment, parsed once by one zod schema into a frozen object;
 * every bad setting is reported at once, each naming the flag or variable and what to write instead.
 */
import { z } from 'zod';
import { loadEnv, type EnvConfig } from '../config/env.js';
import {
  checkProcessSettings,
  parseProcessConfig,
  portField,
  processFields,
  processInput,
  type ProcessFlags,
} from '../config/process-config.js';
import { parseApiKeys, type ApiKey } from './auth.js';

/** Flags of `agentloom api` as commander gives them (strings). */
export interface ApiFlags extends ProcessFlags {
  port?: string;
}

const apiSchema = z
  .object({
    ...processFields({
      apps: 'set --apps PATH or AGENTLOOM_APPS: the apps module (or YAML) the workers serve; the API needs it to accept invocations',
      databaseUrl:
        'the API runs on PostgreSQL: set DATABASE_URL=postgres://… (for an embedded engine with its API use `agentloom dev`)',
    }),
    port: portField('--port / PORT'),
    apiKeys: z.string().superRefine((spec, ctx) => {
      try {
        parseApiKeys(spec);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  })
  .superRefine(checkProcessSettings);

/** The resolved configuration of an API process. */
export type ApiConfig = Readonly<Omit<z.infer<typeof apiSchema>, 'apiKeys'> & { apiKeys: readonly ApiKey[] }>;

/** Resolves flags and environment into an {@link ApiConfig}; throws CONFIG listing every problem. */
export function apiConfig(flags: ApiFlags, env: EnvConfig = loadEnv()): ApiConfig {
  const config = parseProcessConfig('api', apiSchema, {
    ...processInput(flags, env),
    port: flags.port ?? env.PORT ?? 8080,
    apiKeys: env.AGENTLOOM_API_KEYS ?? '',
  });
  return Object.freeze({ ...config, apiKeys: parseApiKeys(config.apiKeys) });
}
