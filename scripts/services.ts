/**
 * Starts local PostgreSQL and Redis for development (the same binaries the tests use) and prints the
 * environment to use them. `up` runs in the foreground until Ctrl-C; `env` prints where they would run.
 *
 *   npm run services            # starts both, prints DATABASE_URL / REDIS_URL, stops on Ctrl-C
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLocalPostgres, startLocalRedis } from '../test/support/services/local-services.js';

const dir = resolve(process.env.AGENTLOOM_SERVICES_DIR ?? '.services');
mkdirSync(dir, { recursive: true });
chmodSync(dir, 0o755);
const redis = await startLocalRedis(join(dir, 'redis'));
const postgres = await startLocalPostgres(join(dir, 'pg'));
console.log(`export DATABASE_URL=${postgres.url}`);
console.log(`export REDIS_URL=${redis.url}`);
console.log('# services running; Ctrl-C (or SIGTERM) stops them');
const stop = async () => {
  await Promise.all([postgres.stop(), redis.stop()]);
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
setInterval(() => undefined, 1 << 30);
