/**
 * The settings groups agentloom's processes share (`api`, `worker`, `dev`): the apps path, the database and the
 * queue, the log level. Each is one zod group of settings.ts, composed by api-config, worker-config and dev.
 */
import * as z from 'zod';
import type { EnvConfig } from './env.js';
import { settingsGroup, type SettingsGroup } from './settings.js';

/** The apps flag, as commander gives it. */
export interface AppsFlags {
  apps?: string;
}

const readApps = (flags: AppsFlags, env: EnvConfig) => ({ apps: flags.apps ?? env.AGENTLOOM_APPS });

/**
 * The apps path: `--apps`, else AGENTLOOM_APPS. Required, `hint` saying what to set and why this process needs it.
 */
export function appsGroup(hint: string): SettingsGroup<{ apps: z.ZodString }, AppsFlags> {
  return settingsGroup({ fields: { apps: z.string({ error: hint }).min(1, hint) }, read: readApps });
}

/** The apps path when a process has its own default (`dev`: the example app): undefined when not given. */
export const optionalAppsGroup = settingsGroup({
  fields: { apps: z.string().optional() },
  read: readApps,
});

/** The queue flag, as commander gives it. */
export interface BackendFlags {
  queue?: string;
}

/**
 * The database and the queue of a distributed process: DATABASE_URL (`databaseHint`: said when it is missing, each
 * process needs it for its own reason), `--queue` redis (default) or postgres, REDIS_URL, AGENTLOOM_QUEUE_PREFIX.
 * A redis queue needs REDIS_URL.
 */
export function backendGroup(databaseHint: string) {
  return settingsGroup({
    fields: {
      databaseUrl: z.string({ error: databaseHint }),
      queue: z.enum(['redis', 'postgres'], { error: "--queue must be 'redis' or 'postgres'" }),
      redisUrl: z.string().optional(),
      prefix: z.string().optional(),
    },
    read: (flags: BackendFlags, env: EnvConfig) => ({
      databaseUrl: env.DATABASE_URL,
      queue: flags.queue ?? 'redis',
      redisUrl: env.REDIS_URL,
      prefix: env.AGENTLOOM_QUEUE_PREFIX,
    }),
    check: (settings, ctx) => {
      if (settings.queue === 'redis' && !settings.redisUrl) {
        ctx.addIssue({
          code: 'custom',
          path: ['redisUrl'],
          message: 'the redis queue needs REDIS_URL=redis://…; or run without Redis with --queue postgres',
        });
      }
    },
  });
}

/** The log level: LOG_LEVEL (checked by env.ts), else `defaultLevel` (`info` for servers, `warn` for `dev`). */
export function logGroup(defaultLevel: string) {
  return settingsGroup({
    fields: { logLevel: z.string() },
    read: (_flags: object, env: EnvConfig) => ({ logLevel: env.LOG_LEVEL ?? defaultLevel }),
  });
}

/** What a distributed process says when a shared setting is missing (each needs them for its own reason). */
export interface ServerHints {
  /** Said when neither --apps nor AGENTLOOM_APPS is given. */
  apps: string;
  /** Said when DATABASE_URL is missing. */
  databaseUrl: string;
}

/** The groups a distributed process (`api`, `worker`) starts with: apps, database and queue, log level `info`. */
export function serverGroups(hints: ServerHints) {
  return [appsGroup(hints.apps), backendGroup(hints.databaseUrl), logGroup('info')] as const;
}

/** The resolved apps, database and queue settings of a distributed process. */
export interface BackendSettings {
  readonly apps: string;
  readonly databaseUrl: string;
  readonly queue: 'redis' | 'postgres';
  readonly redisUrl?: string | undefined;
  readonly prefix?: string | undefined;
}

/**
 * The `apps`, `database` and `queue` options of `createEngine` for a distributed process: PostgreSQL, and BullMQ
 * on Redis or on PostgreSQL.
 */
export function backendOptions(settings: BackendSettings): {
  apps: string;
  database: string;
  queue: { redis: string; prefix?: string } | { postgres: string; prefix?: string };
} {
  return {
    apps: settings.apps,
    database: settings.databaseUrl,
    queue:
      settings.queue === 'redis'
        ? { redis: settings.redisUrl as string, prefix: settings.prefix }
        : { postgres: settings.databaseUrl, prefix: settings.prefix },
  };
}
