/**
 * Configuration of `agentloom worker`: flags, then environment, parsed once by one zod schema into a frozen
 * object; every bad setting is reported at once, each naming the flag or variable and what to write instead.
 */
import { z } from 'zod';
import { loadEnv, type EnvConfig } from './env.js';
import {
  checkProcessSettings,
  parseProcessConfig,
  portField,
  processFields,
  processInput,
  type ProcessFlags,
} from './process-config.js';

/** Flags of `agentloom worker` as commander gives them (strings). */
export interface WorkerFlags extends ProcessFlags {
  concurrency?: string;
  leaseMs?: string;
  graceMs?: string;
  metricsPort?: string;
}

const ms = (name: string, min: number) =>
  z.coerce
    .number({ error: `${name} must be a number of milliseconds` })
    .int(`${name} must be a whole number of milliseconds`)
    .min(min, `${name} must be at least ${min} (ms)`);

const METRICS_PORT = '--metrics-port / AGENTLOOM_METRICS_PORT';

const workerSchema = z
  .object({
    ...processFields({
      apps: 'set --apps PATH or AGENTLOOM_APPS: a .js or .ts module exporting `apps`',
      databaseUrl:
        'a worker runs on PostgreSQL only: set DATABASE_URL=postgres://… (a PGlite database lives inside one process and cannot be shared by workers; for an embedded engine use `agentloom dev`)',
    }),
    concurrency: z.coerce
      .number({ error: '--concurrency must be a number' })
      .int('--concurrency must be a whole number')
      .min(1, '--concurrency must be at least 1')
      .max(1000, '--concurrency must be at most 1000'),
    leaseMs: ms('--lease-ms / AGENTLOOM_LEASE_MS', 100),
    graceMs: ms('--grace-ms', 0),
    /** Serve Prometheus metrics on this port (0: any free port); none when absent. */
    metricsPort: portField(METRICS_PORT, { noun: 'port number' }).optional(),
  })
  .superRefine(checkProcessSettings);

/** The resolved configuration of a worker process. */
export type WorkerConfig = Readonly<z.infer<typeof workerSchema>>;

/** Resolves flags and environment into a {@link WorkerConfig}; throws CONFIG listing every problem. */
export function workerConfig(flags: WorkerFlags, env: EnvConfig = loadEnv()): WorkerConfig {
  const config = parseProcessConfig('worker', workerSchema, {
    ...processInput(flags, env),
    concurrency: flags.concurrency ?? 64,
    leaseMs: flags.leaseMs ?? env.AGENTLOOM_LEASE_MS ?? 15_000,
    graceMs: flags.graceMs ?? 30_000,
    metricsPort: flags.metricsPort ?? env.AGENTLOOM_METRICS_PORT,
  });
  return Object.freeze(config);
}
