/**
 * Configuration of `agentloom worker`: the shared apps, backend and log groups (process-config.ts) and the worker's
 * own (concurrency, lease, grace, metrics port), parsed once into a frozen object; every bad setting at once.
 */
import * as z from 'zod';
import { loadEnv, type EnvConfig } from './env.js';
import { serverGroups } from './process-config.js';
import { parseSettings, portField, settingsGroup, type FlagsOf, type SettingsOf } from './settings.js';

const ms = (name: string, min: number) =>
  z.coerce
    .number({ error: `${name} must be a number of milliseconds` })
    .int(`${name} must be a whole number of milliseconds`)
    .min(min, `${name} must be at least ${min} (ms)`);

/** What only a worker sets: how many steps at once, their lease, the drain's grace, the metrics port. */
const stepsGroup = settingsGroup({
  fields: {
    concurrency: z.coerce
      .number({ error: '--concurrency must be a number' })
      .int('--concurrency must be a whole number')
      .min(1, '--concurrency must be at least 1')
      .max(1000, '--concurrency must be at most 1000'),
    leaseMs: ms('--lease-ms / AGENTLOOM_LEASE_MS', 100),
    graceMs: ms('--grace-ms', 0),
    /** Serve Prometheus metrics on this port (0: any free port); none when absent. */
    metricsPort: portField('--metrics-port / AGENTLOOM_METRICS_PORT', { noun: 'port number' }).optional(),
  },
  read: (
    flags: { concurrency?: string; leaseMs?: string; graceMs?: string; metricsPort?: string },
    env: EnvConfig,
  ) => ({
    concurrency: flags.concurrency ?? 64,
    leaseMs: flags.leaseMs ?? env.AGENTLOOM_LEASE_MS ?? 15_000,
    graceMs: flags.graceMs ?? 30_000,
    metricsPort: flags.metricsPort ?? env.AGENTLOOM_METRICS_PORT,
  }),
});

const workerGroups = [
  ...serverGroups({
    apps: 'set --apps PATH or AGENTLOOM_APPS: a .js or .ts module exporting `apps`',
    databaseUrl:
      'a worker runs on PostgreSQL only: set DATABASE_URL=postgres://… (a PGlite database lives inside one process and cannot be shared by workers; for an embedded engine use `agentloom dev`)',
  }),
  stepsGroup,
] as const;

/** Flags of `agentloom worker` as commander gives them (strings). */
export type WorkerFlags = FlagsOf<typeof workerGroups>;

/** The resolved configuration of a worker process. */
export type WorkerConfig = SettingsOf<typeof workerGroups>;

/** Resolves flags and environment into a {@link WorkerConfig}; throws CONFIG listing every problem. */
export function workerConfig(flags: WorkerFlags, env: EnvConfig = loadEnv()): WorkerConfig {
  return parseSettings('worker', workerGroups, { flags, env });
}
