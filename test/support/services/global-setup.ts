/**
 * Vitest global setup of the integration and e2e projects: provides a PostgreSQL server holding a migrated
 * template database, and a Redis server. In order of preference: DATABASE_URL / REDIS_URL from the environment;
 * testcontainers when a Docker engine answers; otherwise local binaries on free ports in a temp directory.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, openDatabase, Store } from '../../../src/store/index.js';
import { startLocalPostgres, startLocalRedis } from './local-services.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the PostgreSQL server (connect to it to create databases). */
    postgresAdminUrl: string;
    /** Name of the migrated template database to clone per test file. */
    templateDatabase: string;
    redisUrl: string;
    /** How the services were obtained: 'env', 'testcontainers' or 'local'. */
    servicesSource: string;
  }
}

type Stop = () => Promise<void>;

function dockerMayAnswer(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

async function fromTestcontainers(): Promise<{ pgUrl: string; redisUrl: string; stop: Stop } | undefined> {
  if (!dockerMayAnswer()) return undefined;
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const { RedisContainer } = await import('@testcontainers/redis');
    const [pgC, redisC] = await Promise.all([
      new PostgreSqlContainer('postgres:16-alpine').start(),
      new RedisContainer('redis:7-alpine').start(),
    ]);
    return {
      pgUrl: pgC.getConnectionUri(),
      redisUrl: redisC.getConnectionUrl(),
      stop: async () => {
        await Promise.all([pgC.stop(), redisC.stop()]);
      },
    };
  } catch (err) {
    console.warn(`testcontainers unavailable (${(err as Error).message}); using local binaries`);
    return undefined;
  }
}

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function setup(project: TestProject): Promise<Stop> {
  const stops: Stop[] = [];
  const teardown = async () => {
    for (const stop of stops) await stop().catch((err: unknown) => console.warn('teardown:', err));
  };
  try {
    await provideServices(project, stops);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

async function provideServices(project: TestProject, stops: Stop[]): Promise<void> {
  let pgUrl = process.env.DATABASE_URL;
  let redisUrl = process.env.REDIS_URL;
  let source = 'env';
  if (!pgUrl || !redisUrl) {
    const containers = await fromTestcontainers();
    if (containers) {
      source = 'testcontainers';
      pgUrl ??= containers.pgUrl;
      redisUrl ??= containers.redisUrl;
      stops.push(containers.stop);
    } else {
      source = 'local';
      const dir = mkdtempSync(join(tmpdir(), 'agentloom-test-'));
      // The postgres user must be able to reach its data directory below this one.
      chmodSync(dir, 0o755);
      stops.push(async () => rmSync(dir, { recursive: true, force: true }));
      const localRedis = redisUrl ? undefined : await startLocalRedis(join(dir, 'redis'));
      if (localRedis) stops.unshift(localRedis.stop);
      const localPg = pgUrl ? undefined : await startLocalPostgres(join(dir, 'pg'));
      if (localPg) stops.unshift(localPg.stop);
      pgUrl ??= localPg?.url;
      redisUrl ??= localRedis?.url;
    }
  }
  if (!pgUrl || !redisUrl) throw new Error('test services: no PostgreSQL or Redis could be provided');

  // A template per run, so concurrent runs against one external server do not collide.
  const template = `agentloom_tpl_${process.pid}_${Date.now().toString(36)}`;
  await adminQuery(pgUrl, `CREATE DATABASE ${template}`);
  const database = await openDatabase(withDatabase(pgUrl, template));
  try {
    await migrate(database);
  } finally {
    await database.close();
  }
  stops.unshift(() => adminQuery(pgUrl, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`));

  await warmPgliteTemplates();

  project.provide('postgresAdminUrl', pgUrl);
  project.provide('templateDatabase', template);
  project.provide('redisUrl', redisUrl);
  project.provide('servicesSource', source);
}

/**
 * Builds the cached PGlite templates (a migrated one for stores, a bare one for plain databases) before any test
 * file runs: on a fresh machine the first embedded store of a run would otherwise build them, in several files
 * and `dev` processes at once, each paying PostgreSQL's initdb in WebAssembly. Once cached, this costs the open of
 * two in-memory databases.
 */
async function warmPgliteTemplates(): Promise<void> {
  const store = await Store.open({ pglite: 'memory' });
  await store.close();
  const database = await openDatabase({ pglite: 'memory' });
  await database.close();
}
