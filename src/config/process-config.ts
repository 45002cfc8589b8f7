/**
 * What the configurations of agentloom's server processes (`agentloom api`, `agentloom worker`) share: where the
 * apps, the database and the queue are, the queue prefix and the log level, read from flags then environment by
 * zod, with one error listing every problem. Each process adds its own settings to {@link processFields}.
 */
import { z } from 'zod';
import { AgentloomError } from '../core/errors.js';
import type { EnvConfig } from './env.js';

/** Flags every server process takes, as commander gives them (strings). */
export interface ProcessFlags {
  apps?: string;
  queue?: string;
}

/** What a process says when a shared setting is missing (each process needs them for its own reason). */
export interface ProcessHints {
  /** Said when neither --apps nor AGENTLOOM_APPS is given. */
  apps: string;
  /** Said when DATABASE_URL is missing. */
  databaseUrl: string;
}

/** The shared fields of a process's zod schema; spread them into its `z.object({ … })`. */
export function processFields(hints: ProcessHints) {
  return {
    apps: z.string({ error: hints.apps }).min(1, hints.apps),
    databaseUrl: z.string({ error: hints.databaseUrl }),
    queue: z.enum(['redis', 'postgres'], { error: "--queue must be 'redis' or 'postgres'" }),
    redisUrl: z.string().optional(),
    prefix: z.string().optional(),
    logLevel: z.string(),
  };
}

/**
 * A port setting (0: any free port), its errors naming `label` (`--port / PORT`) and what to write; `example` is
 * appended to the first one (e.g. `, e.g. --port 8080 (0: any free port)`). One schema for every process's ports.
 */
export function portField(label: string, options: { noun?: string; example?: string } = {}) {
  const range = `${label} must be between 0 and 65535`;
  return z.coerce
    .number({ error: `${label} must be a ${options.noun ?? 'number'}${options.example ?? ''}` })
    .int(`${label} must be a whole number`)
    .min(0, range)
    .max(65535, range);
}

/** The shared settings of a resolved process configuration. */
export interface ProcessSettings {
  readonly apps: string;
  readonly databaseUrl: string;
  readonly queue: 'redis' | 'postgres';
  readonly redisUrl?: string | undefined;
  readonly prefix?: string | undefined;
  readonly logLevel: string;
}

/** The shared fields' input: flags over environment over defaults (queue 'redis', log level 'info'). */
export function processInput(flags: ProcessFlags, env: EnvConfig): Record<keyof ProcessSettings, unknown> {
  return {
    apps: flags.apps ?? env.AGENTLOOM_APPS,
    databaseUrl: env.DATABASE_URL,
    queue: flags.queue ?? 'redis',
    redisUrl: env.REDIS_URL,
    prefix: env.AGENTLOOM_QUEUE_PREFIX,
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}

/** The cross-field rule of the shared settings (use as the schema's `superRefine`): a redis queue needs REDIS_URL. */
export function checkProcessSettings(
  config: Pick<ProcessSettings, 'queue' | 'redisUrl'>,
  ctx: z.RefinementCtx,
): void {
  if (config.queue === 'redis' && !config.redisUrl) {
    ctx.addIssue({
      code: 'custom',
      path: ['redisUrl'],
      message: 'the redis queue needs REDIS_URL=redis://…; or run without Redis with --queue postgres',
    });
  }
}

/**
 * Parses a process's input with its schema; throws CONFIG `agentloom <command>: problem; problem…` listing every
 * problem at once (with the fields in `details.fields`).
 */
export function parseProcessConfig<S extends z.ZodType>(
  command: string,
  schema: S,
  input: unknown,
): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => i.message).join('; ');
    throw new AgentloomError('CONFIG', `agentloom ${command}: ${problems}`, {
      details: { fields: parsed.error.issues.map((i) => i.path.join('.')) },
    });
  }
  return parsed.data;
}

/** The `queue` option of `createEngine` for a process's settings: BullMQ on Redis, or on PostgreSQL. */
export function queueOption(
  config: Pick<ProcessSettings, 'queue' | 'redisUrl' | 'databaseUrl' | 'prefix'>,
): { redis: string; prefix?: string } | { postgres: string; prefix?: string } {
  return config.queue === 'redis'
    ? { redis: config.redisUrl as string, prefix: config.prefix }
    : { postgres: config.databaseUrl, prefix: config.prefix };
}
