/**
 * `agentloom dev`: everything in one process on one machine with no servers to install — PGlite on disk, the
 * in-process queue, the HTTP API and a worker. Serves `--apps` (a module, a YAML file or a folder of them), or
 * without it the example app (the reference pipeline of `agentloom demo`). Without API keys it listens on loopback
 * only. With `--walkthrough` (what `npm start` runs) it also enqueues one run of the example through its own API
 * and prints it live (see walkthrough.ts). SIGINT / SIGTERM close it; exit 0.
 */
import { parseApiKeys, type ApiKey } from '../api/auth.js';
import { serveApi } from '../api/index.js';
import { AgentloomError } from '../core/errors.js';
import { loadEnv, type EnvConfig } from '../config/env.js';
import { portField } from '../config/process-config.js';
import { createEngine } from '../engine/create-engine.js';
import { handleShutdownSignals, processLogger } from '../engine/process-lifecycle.js';
import { StepMetrics } from '../workers/step-metrics.js';
import type { Engine } from '../engine/engine.js';
import { UsageError } from './cli-errors.js';
import { EXAMPLE_APP, EXAMPLE_INPUT, exampleApps } from './demo-app.js';
import { cliLine } from './pending.js';
import { terminalLogger } from './terminal-log.js';
import { runWalkthrough } from './walkthrough.js';

/** Where `dev` keeps its PGlite database unless `--data` says otherwise (kept across restarts). */
export const DEFAULT_DEV_DATA = '.agentloom/data';

/** How long a shutdown may take before the process exits anyway. */
const FORCE_EXIT_MS = 10_000;

/** Flags of `agentloom dev` as commander gives them. */
export interface DevFlags {
  apps?: string;
  port?: string;
  data?: string;
  walkthrough?: boolean;
}

const portSchema = portField('--port / PORT', { example: ', e.g. --port 8080 (0: any free port)' });

/** The resolved configuration of `agentloom dev`. */
export interface DevConfig {
  /** The apps path; undefined: the example app. */
  readonly apps: string | undefined;
  readonly port: number;
  readonly dataDir: string;
  readonly apiKeys: readonly ApiKey[];
  /** The key the walkthrough sends to its own API when keys are configured (AGENTLOOM_API_KEY). */
  readonly clientKey: string | undefined;
  readonly gemini: boolean;
  readonly logLevel: string;
  readonly walkthrough: boolean;
}

/** Resolves flags, then environment; bad values are bad usage (exit 2), each saying what to write. */
export function devConfig(flags: DevFlags, env: EnvConfig = loadEnv()): DevConfig {
  const problems: string[] = [];
  const port = portSchema.safeParse(flags.port ?? env.PORT ?? 8080);
  if (!port.success) problems.push(port.error.issues[0]?.message ?? '--port is invalid');
  const apps = flags.apps ?? env.AGENTLOOM_APPS;
  if (flags.walkthrough && apps !== undefined) {
    problems.push(
      `--walkthrough runs the example app: leave out --apps${flags.apps === undefined ? ' and unset AGENTLOOM_APPS' : ''}`,
    );
  }
  if (flags.data !== undefined && flags.data.trim() === '') problems.push('--data must name a directory');
  if (problems.length > 0) throw new UsageError(`agentloom dev: ${problems.join('; ')}`);
  return Object.freeze({
    apps,
    port: port.data as number,
    dataDir: flags.data ?? DEFAULT_DEV_DATA,
    apiKeys: parseApiKeys(env.AGENTLOOM_API_KEYS ?? ''),
    clientKey: env.AGENTLOOM_API_KEY,
    gemini: Boolean(env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY),
    logLevel: env.LOG_LEVEL ?? 'warn',
    walkthrough: flags.walkthrough ?? false,
  });
}

/** A running `dev` process. */
export interface RunningDev {
  engine: Engine;
  url: string;
  shutdown(): Promise<void>;
}

function isAddressInUse(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'EADDRINUSE';
}

/** Prints what is served where, and a first command to try. */
function printBanner(config: DevConfig, engine: Engine, url: string): void {
  const apps = [...engine.apps.keys()];
  const example = config.apps === undefined;
  const models = config.gemini ? 'Gemini (gemini-2.5-flash)' : 'scripted models, offline';
  console.log(`agentloom dev: listening on ${url}`);
  console.log(
    example
      ? `  app   ${EXAMPLE_APP} (the example: parallel research → draft/critique loop → publish with a human's confirmation; ${models})`
      : `  apps  ${apps.join(', ')} (from ${config.apps})`,
  );
  console.log(`  data  ${config.dataDir} (PGlite, kept across restarts; --data DIR to move it)`);
  console.log(
    `  auth  ${config.apiKeys.length > 0 ? 'API keys of AGENTLOOM_API_KEYS' : 'none: loopback only'}`,
  );
  const app = example ? EXAMPLE_APP : (apps[0] ?? 'APP');
  const input = example ? EXAMPLE_INPUT : 'your input';
  console.log(`  try   ${cliLine(['run', app, input, '--follow'], { url })}`);
}

/** Starts `dev` from its configuration and installs the signal handlers. */
export async function runDev(config: DevConfig): Promise<RunningDev> {
  const log = processLogger(config.logLevel, terminalLogger(config.logLevel));
  // The worker's step metrics are served by the API's /metrics (the API registry has the process metrics).
  const stepMetrics = new StepMetrics({ processMetrics: false });
  const engine = await createEngine({
    apps: config.apps ?? exampleApps(config.gemini),
    database: { pglite: config.dataDir },
    queue: 'local',
    logger: log,
    observer: stepMetrics.observer,
  });
  let served: Awaited<ReturnType<typeof serveApi>>;
  try {
    served = await serveApi(engine, {
      apiKeys: config.apiKeys,
      port: config.port,
      logger: log,
      metricsRegistries: [stepMetrics.registry],
    });
  } catch (err) {
    if (!isAddressInUse(err)) throw err;
    throw new AgentloomError(
      'CONFIG',
      `port ${config.port} is in use (another agentloom dev?): pass --port N, or --port 0 for any free port`,
      { cause: err },
    );
  }
  const { server, url } = served;
  printBanner(config, engine, url);
  const walkthrough = new AbortController();
  const shutdown = handleShutdownSignals({
    name: 'dev',
    logger: log,
    forceExitAfterMs: FORCE_EXIT_MS,
    stop: async () => {
      walkthrough.abort();
      await server.close();
      await engine.close();
    },
  });
  if (config.walkthrough) {
    runWalkthrough({
      url,
      apiKeys: config.apiKeys,
      clientKey: config.clientKey,
      signal: walkthrough.signal,
    }).catch((err: unknown) => {
      if (!walkthrough.signal.aborted) log.error({ err }, 'walkthrough failed (the server keeps serving)');
    });
  }
  return { engine, url, shutdown };
}
