/**
 * Per-test-file services: a fresh database cloned from the migrated template, and a unique BullMQ prefix.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: inject('postgresAdminUrl') });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Creates a database cloned from the migrated template and returns its URL; it is dropped after the file's
 * tests unless `AGENTLOOM_KEEP_TEST_DB` is set (to inspect a failure).
 */
export async function createTestDatabase(): Promise<string> {
  const name = `agentloom_t_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
  afterAll(async () => {
    if (!process.env.AGENTLOOM_KEEP_TEST_DB) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  return withDatabase(inject('postgresAdminUrl'), name);
}

/** An empty database (not migrated), for migration tests. */
export async function createEmptyDatabase(): Promise<string> {
  const name = `agentloom_e_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  afterAll(async () => {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  return withDatabase(inject('postgresAdminUrl'), name);
}

/** A BullMQ key prefix unique to this file. */
export function testQueuePrefix(): string {
  return `t${randomBytes(5).toString('hex')}`;
}

/** The Redis URL of the test services. */
export function testRedisUrl(): string {
  return inject('redisUrl');
}
