import pg from 'pg';
import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';

describe('test services', () => {
  it('provide a PostgreSQL server and a Redis server that answer, from the expected source', async () => {
    // CI runs the suite twice: once with nothing set (local binaries), once with DATABASE_URL / REDIS_URL.
    const expected = process.env.DATABASE_URL && process.env.REDIS_URL ? 'env' : ['local', 'testcontainers'];
    if (typeof expected === 'string') {
      expect(inject('servicesSource')).toBe(expected);
      expect(inject('postgresAdminUrl')).toBe(process.env.DATABASE_URL);
      expect(inject('redisUrl')).toBe(process.env.REDIS_URL);
    } else {
      expect(expected).toContain(inject('servicesSource'));
    }
    const client = new pg.Client({ connectionString: inject('postgresAdminUrl') });
    await client.connect();
    const { rows } = await client.query<{ v: string }>("select current_setting('server_version') as v");
    await client.end();
    expect(rows[0]?.v).toMatch(/^\d+/);
    const redis = new Redis(inject('redisUrl'));
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();
  });
});
