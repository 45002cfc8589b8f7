/** `agentloom worker` configuration: flags over environment, every problem reported at once with what to write. */
import { describe, expect, it } from 'vitest';
import { workerConfig } from '../../src/config/worker-config.js';
import { loadEnv } from '../../src/config/env.js';

const env = (vars: Record<string, string>) => loadEnv(vars as NodeJS.ProcessEnv);

describe('worker configuration', () => {
  it('takes flags over environment and fills the defaults', () => {
    const config = workerConfig(
      { apps: './apps.ts', leaseMs: '2000' },
      env({
        DATABASE_URL: 'postgres://db/x',
        REDIS_URL: 'redis://r:6379',
        AGENTLOOM_APPS: './other.ts',
        AGENTLOOM_LEASE_MS: '9000',
        AGENTLOOM_QUEUE_PREFIX: 'blue',
      }),
    );
    expect(config).toMatchObject({
      apps: './apps.ts',
      databaseUrl: 'postgres://db/x',
      queue: 'redis',
      redisUrl: 'redis://r:6379',
      prefix: 'blue',
      concurrency: 64,
      leaseMs: 2000,
      graceMs: 30_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(
      workerConfig(
        {},
        env({
          DATABASE_URL: 'postgres://db/x',
          REDIS_URL: 'redis://r',
          AGENTLOOM_APPS: 'a.js',
          AGENTLOOM_LEASE_MS: '9000',
        }),
      ).leaseMs,
    ).toBe(9000);
  });

  it('runs without Redis on the postgres queue', () => {
    const config = workerConfig(
      { apps: 'a.js', queue: 'postgres' },
      env({ DATABASE_URL: 'postgres://db/x' }),
    );
    expect(config.queue).toBe('postgres');
  });

  it('refuses PGlite (no DATABASE_URL) and says why, listing every other problem too', () => {
    let error: unknown;
    try {
      workerConfig({ concurrency: '0', queue: 'kafka', graceMs: 'soon' }, env({}));
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'CONFIG' });
    const message = (error as Error).message;
    expect(message).toMatch(/set --apps PATH or AGENTLOOM_APPS/);
    expect(message).toMatch(
      /a worker runs on PostgreSQL only: set DATABASE_URL.*PGlite database lives inside one process/,
    );
    expect(message).toMatch(/--queue must be 'redis' or 'postgres'/);
    expect(message).toMatch(/--concurrency must be at least 1/);
    expect(message).toMatch(/--grace-ms must be a number of milliseconds/);
  });

  it('needs REDIS_URL for the redis queue and says how to run without it', () => {
    expect(() => workerConfig({ apps: 'a.js' }, env({ DATABASE_URL: 'postgres://db/x' }))).toThrow(
      /the redis queue needs REDIS_URL=redis:\/\/…; or run without Redis with --queue postgres/,
    );
  });

  it('serves metrics on --metrics-port, else AGENTLOOM_METRICS_PORT, else not at all', () => {
    const base = { DATABASE_URL: 'postgres://db/x', REDIS_URL: 'redis://r', AGENTLOOM_APPS: 'a.js' };
    expect(workerConfig({}, env(base)).metricsPort).toBeUndefined();
    expect(workerConfig({}, env({ ...base, AGENTLOOM_METRICS_PORT: '9464' })).metricsPort).toBe(9464);
    expect(
      workerConfig({ metricsPort: '0' }, env({ ...base, AGENTLOOM_METRICS_PORT: '9464' })).metricsPort,
    ).toBe(0);
    // Reported with every other problem at once.
    const problems = (() => {
      try {
        workerConfig({ metricsPort: '70000', concurrency: '0' }, env(base));
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(problems).toMatch(/--metrics-port \/ AGENTLOOM_METRICS_PORT must be between 0 and 65535/);
    expect(problems).toMatch(/--concurrency must be at least 1/);
    expect(() => workerConfig({ metricsPort: 'nine' }, env(base))).toThrow(
      /--metrics-port \/ AGENTLOOM_METRICS_PORT must be a port number/,
    );
    expect(() => env({ ...base, AGENTLOOM_METRICS_PORT: 'x' })).toThrow(/AGENTLOOM_METRICS_PORT/);
  });
});
