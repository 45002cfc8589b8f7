/**
 * Configuration of `agentloom api`: the shared apps, backend and log groups (config/process-config.ts) and the
 * HTTP group (port, API keys; `dev` composes it too), parsed once into a frozen object; every bad setting at once.
 */
import * as z from 'zod';
import { loadEnv, type EnvConfig } from '../config/env.js';
import { serverGroups } from '../config/process-config.js';
import {
  parseSettings,
  portField,
  settingsGroup,
  type FlagsOf,
  type SettingsOf,
} from '../config/settings.js';
import { parseApiKeys } from './http/auth.js';

/**
 * Where the HTTP API listens and who may call it: `--port`, else PORT, else 8080 (0: any free port); the keys of
 * AGENTLOOM_API_KEYS, parsed (a bad entry is reported with the other problems, its key never echoed).
 */
export const httpGroup = settingsGroup({
  fields: {
    port: portField('--port / PORT', { example: ', e.g. --port 8080 (0: any free port)' }),
    apiKeys: z.string().transform((spec, ctx) => {
      try {
        return parseApiKeys(spec);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  },
  read: (flags: { port?: string }, env: EnvConfig) => ({
    port: flags.port ?? env.PORT ?? 8080,
    apiKeys: env.AGENTLOOM_API_KEYS ?? '',
  }),
});

const apiGroups = [
  ...serverGroups({
    apps: 'set --apps PATH or AGENTLOOM_APPS: the apps module (or YAML) the workers serve; the API needs it to accept invocations',
    databaseUrl:
      'the API runs on PostgreSQL: set DATABASE_URL=postgres://… (for an embedded engine with its API use `agentloom dev`)',
  }),
  httpGroup,
] as const;

/** Flags of `agentloom api` as commander gives them (strings). */
export type ApiFlags = FlagsOf<typeof apiGroups>;

/** The resolved configuration of an API process. */
export type ApiConfig = SettingsOf<typeof apiGroups>;

/** Resolves flags and environment into an {@link ApiConfig}; throws CONFIG listing every problem. */
export function apiConfig(flags: ApiFlags, env: EnvConfig = loadEnv()): ApiConfig {
  return parseSettings('api', apiGroups, { flags, env });
}
