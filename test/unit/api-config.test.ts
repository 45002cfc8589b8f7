/** `agentloom api` configuration: flags over environment, every problem reported at once, keys never echoed. */
import { describe, expect, it } from 'vitest';
import { apiConfig } from '../../src/api/index.js';
import { loadEnv } from '../../src/config/env.js';

const env = (vars: Record<string, string>) => loadEnv(vars as NodeJS.ProcessEnv);

describe('apiConfig', () => {
  it('resolves flags, then environment, then defaults into a frozen config with parsed keys', () => {
    const config = apiConfig(
      { apps: 'apps.ts' },
      env({
        DATABASE_URL: 'postgres://db/x',
        REDIS_URL: 'redis://r:6379',
        AGENTLOOM_API_KEYS: 'ops:k1 writer:k2:writer',
        AGENTLOOM_QUEUE_PREFIX: 'p1',
        PORT: '9090',
      }),
    );
    expect(config).toMatchObject({
      apps: 'apps.ts',
      databaseUrl: 'postgres://db/x',
      queue: 'redis',
      redisUrl: 'redis://r:6379',
      prefix: 'p1',
      port: 9090,
      logLevel: 'info',
    });
    expect(config.apiKeys.map((k) => k.name)).toEqual(['ops', 'writer']);
    expect(Object.isFrozen(config)).toBe(true);
    expect(
      apiConfig({ port: '0', queue: 'postgres', apps: 'a.yaml' }, env({ DATABASE_URL: 'postgres://d' })),
    ).toMatchObject({
      port: 0,
      queue: 'postgres',
      apiKeys: [],
    });
    expect(apiConfig({ apps: 'a.ts', queue: 'postgres' }, env({ DATABASE_URL: 'postgres://d' })).port).toBe(
      8080,
    );
  });

  it('lists every problem at once, naming what to set, without echoing a key', () => {
    let error: unknown;
    try {
      apiConfig({ port: '70000', queue: 'kafka' }, env({ AGENTLOOM_API_KEYS: 'ops:s3cret ops:other' }));
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'CONFIG' });
    const message = (error as Error).message;
    for (const part of [
      '--apps',
      'DATABASE_URL',
      "--queue must be 'redis' or 'postgres'",
      '--port',
      'used twice',
    ]) {
      expect(message).toContain(part);
    }
    expect(message).not.toContain('s3cret');
    expect(() => apiConfig({ apps: 'a.ts' }, env({ DATABASE_URL: 'postgres://d' }))).toThrow(/REDIS_URL/);
  });
});
