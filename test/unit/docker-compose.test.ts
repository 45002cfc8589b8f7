/**
 * docker-compose.yml, Dockerfile and .dockerignore, checked without a Docker engine: the compose file parses (with
 * the YAML library, and with `docker compose config` where that binary exists), has the services, healthchecks
 * and start order a deployment needs, and every agentloom service runs a command of the CLI's command table with
 * flags that command accepts — commands the e2e tests run as real processes — on flags and an environment that
 * the process's own configuration parser accepts. The Dockerfile builds dist/ in one stage and runs it, with
 * production dependencies only, as a non-root user, in another.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { apiConfig } from '../../src/api/index.js';
import { loadEnv } from '../../src/config/env.js';
import { workerConfig } from '../../src/config/worker-config.js';

const REPO = resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(REPO, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  restart?: string;
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const AGENTLOOM = ['migrate', 'api', 'worker'];

/** Compose's interpolation with no variable set: `${X:-default}` → default, `${X}` → ''. */
function interpolate(value: string): string {
  return value.replace(/\$\{\w+(?::?-([^}]*))?\}/g, (_, fallback: string | undefined) => fallback ?? '');
}

function environmentOf(service: Service): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]),
  );
}

/** `['--port', '8080', '--x']` → `{ port: '8080', x: true }`, camel-cased as commander does. */
function flagsOf(args: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const name = (args[i] as string)
      .replace(/^--/, '')
      .replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    flags[name] = args[i + 1] ?? '';
    i++;
  }
  return flags;
}

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [join(REPO, 'bin/agentloom.js'), ...args], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** Every source file of the e2e suites and their support code. */
function e2eSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) files.push(readFileSync(path, 'utf8'));
    }
  };
  walk(join(REPO, 'test/e2e'));
  walk(join(REPO, 'test/support'));
  return files;
}

describe('docker-compose.yml', () => {
  it('has postgres, redis, a one-shot migrate, api and worker, the last three from one Dockerfile image', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'migrate', 'postgres', 'redis', 'worker']);
    expect(services.postgres?.image).toMatch(/^postgres:/);
    expect(services.redis?.image).toMatch(/^redis:/);
    for (const name of AGENTLOOM) {
      const service = services[name] as Service;
      expect(service.build, name).toBe('.');
      expect(service.image, name).toBe(services.api?.image);
      expect(Array.isArray(service.command), `${name}: command as a list`).toBe(true);
    }
    expect(services.migrate?.restart).toBe('no');
    expect(existsSync(join(REPO, 'Dockerfile'))).toBe(true);
  });

  it('checks health: pg_isready, redis-cli ping, the api and worker /healthz on the ports their commands use', () => {
    expect(services.postgres?.healthcheck?.test.join(' ')).toMatch(/pg_isready/);
    expect(services.redis?.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
    const port = (service: string, flag: string) => {
      const command = services[service]?.command ?? [];
      return command[command.indexOf(flag) + 1];
    };
    expect(services.api?.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port('api', '--port')}/healthz`);
    expect(services.worker?.healthcheck?.test.join(' ')).toContain(
      `127.0.0.1:${port('worker', '--metrics-port')}/healthz`,
    );
  });

  it('starts api and worker only after migrate succeeded on a healthy database and queue', () => {
    expect(services.migrate?.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    for (const name of ['api', 'worker']) {
      expect(services[name]?.depends_on, name).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
    }
  });

  it('gives each process an environment and flags its own configuration parser accepts', () => {
    const pg = services.postgres?.environment ?? {};
    const databaseUrl = `postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@postgres:5432/${pg.POSTGRES_DB}`;
    for (const name of AGENTLOOM)
      expect(environmentOf(services[name] as Service).DATABASE_URL, name).toBe(databaseUrl);

    const apiEnv = loadEnv(environmentOf(services.api as Service));
    const api = apiConfig(flagsOf(services.api?.command?.slice(1) ?? []), apiEnv);
    expect(api).toMatchObject({ queue: 'redis', redisUrl: 'redis://redis:6379', port: 8080 });
    // With keys the API listens on every interface, so the published port reaches it.
    expect(api.apiKeys.length).toBeGreaterThan(0);

    const workerEnv = loadEnv(environmentOf(services.worker as Service));
    const worker = workerConfig(flagsOf(services.worker?.command?.slice(1) ?? []), workerEnv);
    expect(worker).toMatchObject({ queue: 'redis', redisUrl: 'redis://redis:6379', metricsPort: 9464 });
    expect(worker.apps).toBe(api.apps);
    // The default apps path is a file the image ships.
    expect(worker.apps).toMatch(/^\/app\//);
    expect(existsSync(join(REPO, worker.apps.replace(/^\/app\//, '')))).toBe(true);
  });

  it('runs only CLI commands of the command table, with flags they accept, that the e2e tests run', () => {
    const help = cli(['--help']);
    expect(help.status, help.stderr).toBe(0);
    const table = [...help.stdout.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]);
    const sources = e2eSources();
    for (const name of AGENTLOOM) {
      const [command, ...args] = services[name]?.command ?? [];
      expect(table, name).toContain(command);
      const options = cli([command as string, '--help']);
      expect(options.status, options.stderr).toBe(0);
      const accepted = [...options.stdout.matchAll(/(--[a-z][a-z-]*)/g)].map((m) => m[1]);
      const flags = args.filter((a) => a.startsWith('--'));
      for (const flag of flags) expect(accepted, `${name}: ${flag}`).toContain(flag);
      // Run as a real process by an e2e test, with every flag used here.
      const runners = sources.filter((s) => s.includes('bin/agentloom.js') && s.includes(`'${command}'`));
      expect(runners.length, `an e2e test runs \`agentloom ${command}\``).toBeGreaterThan(0);
      for (const flag of flags) {
        expect(
          sources.some((s) => s.includes(`'${flag}'`)),
          `an e2e test passes ${flag}`,
        ).toBe(true);
      }
    }
  }, 120_000);

  const composeBin = ['compose', 'docker-compose'].find((bin) => {
    const args = bin === 'compose' ? ['compose', 'version'] : ['version'];
    return spawnSync(bin === 'compose' ? 'docker' : bin, args, { encoding: 'utf8' }).status === 0;
  });
  it.skipIf(composeBin === undefined)(
    '`docker compose config` accepts it (skipped where no docker compose binary is installed)',
    () => {
      const [bin, args] =
        composeBin === 'compose' ? ['docker', ['compose']] : ['docker-compose', [] as string[]];
      const result = spawnSync(
        bin as string,
        [...(args as string[]), '-f', 'docker-compose.yml', 'config', '--quiet'],
        {
          cwd: REPO,
          encoding: 'utf8',
        },
      );
      expect(result.status, result.stderr).toBe(0);
    },
  );
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const ignored = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it('builds dist/ with `npm run build`, then runs it with production dependencies as a non-root user', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((s) => /RUN npm run build/.test(s));
    expect(build, 'a stage runs npm run build').toBeDefined();
    expect(build).toMatch(/RUN npm ci\b/);
    const runtime = stages.at(-1) as string;
    expect(runtime).toMatch(/COPY --from=\w+ \/app\/dist \.\/dist/);
    // Production dependencies only: from a stage that installed with --omit=dev.
    const deps = /COPY --from=(\w+) \/app\/node_modules/.exec(runtime)?.[1];
    const depsStage = stages.find((s) => s.includes(` AS ${deps}`));
    expect(depsStage).toMatch(/npm ci --omit=dev/);
    const user = /^USER (\S+)/m.exec(runtime)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(runtime).toMatch(/^ENTRYPOINT \["node", "bin\/agentloom\.js"\]/m);
    expect(runtime).not.toMatch(/COPY src\b/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) =>
      (m[1] as string).split(' '),
    );
    expect(sources).toEqual(expect.arrayContaining(['bin', 'migrations', 'src', 'package.json']));
    for (const source of sources) {
      expect(existsSync(join(REPO, source)), source).toBe(true);
      expect(ignored, source).not.toContain(source);
    }
    for (const heavy of ['node_modules', 'dist', '.git']) expect(ignored).toContain(heavy);
  });
});
