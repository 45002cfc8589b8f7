/**
 * Configuration of `agentloom worker`: flags, then environment, parsed once by one zod schema into a frozen
 * object; every bad setting is reported at once, each naming the flag or variable and what to write instead.
 */
import { z } from 'zod';
import { AgentloomError } from '../core/errors.js';
import { loadEnv, type EnvConfig } from './env.js';

/** Flags of `agentloom worker` as commander gives them (strings). */
export interface WorkerFlags {
  apps?: string;
  concurrency?: string;
  queue?: string;
  leaseMs?: string;
  graceMs?: string;
}

const ms = (name: string, min: number) =>
  z.coerce
    .number({ error: `${name} must be a number of milliseconds` })
    .int(`${name} must be a whole number of milliseconds`)
    .min(min, `${name} must be at least ${min} (ms)`);

const workerSchema = z
  .object({
    apps: z
      .string({ error: 'set --apps PATH or AGENTLOOM_APPS: a .js or .ts module exporting `apps`' })
      .min(1),
    databaseUrl: z.string({
      error:
        'a worker runs on PostgreSQL only: set DATABASE_URL=postgres://… (a PGlite database lives inside one process and cannot be shared by workers; for an embedded engine use `agentloom dev`)',
    }),
    queue: z.enum(['redis', 'postgres'], { error: "--queue must be 'redis' or 'postgres'" }),
    redisUrl: z.string().optional(),
    prefix: z.string().optional(),
    concurrency: z.coerce
      .number({ error: '--concurrency must be a number' })
      .int('--concurrency must be a whole number')
      .min(1, '--concurrency must be at least 1')
      .max(1000, '--concurrency must be at most 1000'),
    leaseMs: ms('--lease-ms / AGENTLOOM_LEASE_MS', 100),
    graceMs: ms('--grace-ms', 0),
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

/** The resolved configuration of a worker process. */
export type WorkerConfig = Readonly<z.infer<typeof workerSchema>>;

/** Resolves flags and environment into a {@link WorkerConfig}; throws CONFIG listing every problem. */
export function workerConfig(flags: WorkerFlags, env: EnvConfig = loadEnv()): WorkerConfig {
  const parsed = workerSchema.safeParse({
    apps: flags.apps ?? env.AGENTLOOM_APPS,
    databaseUrl: env.DATABASE_URL,
    queue: flags.queue ?? 'redis',
    redisUrl: env.REDIS_URL,
    prefix: env.AGENTLOOM_QUEUE_PREFIX,
    concurrency: flags.concurrency ?? 64,
    leaseMs: flags.leaseMs ?? env.AGENTLOOM_LEASE_MS ?? 15_000,
    graceMs: flags.graceMs ?? 30_000,
    logLevel: env.LOG_LEVEL ?? 'info',
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => i.message).join('; ');
    throw new AgentloomError('CONFIG', `agentloom worker: ${problems}`, {
      details: { fields: parsed.error.issues.map((i) => i.path.join('.')) },
    });
  }
  return Object.freeze(parsed.data);
}
