/**
 * `agentloom dev`: everything in one process on one machine with no servers to install — PGlite on disk, the
 * in-process queue, the HTTP API and a worker. Serves `--apps` (a module, a YAML file or a folder of them), or
 * without it the example app (the reference pipeline of `agentloom demo`). Without API keys it listens on loopback
 * only. Without AGENTLOOM_SECRET_KEY it seals users' tool credentials with a key of its own, kept in the data
 * directory (dev-secret-key.ts). With `--walkthrough` (what `npm start` runs) it also enqueues one run of the
 * example through its own API and prints it live (see walkthrough.ts). SIGINT / SIGTERM close it; exit 0.
 */
import * as z from 'zod';
import { httpGroup } from '../../api/api-config.js';
import { ADK_DEVTOOLS_PACKAGE, findAdkDevUi } from '../../api/adk/adk-dev-ui.js';
import { serveApi } from '../../api/index.js';
import { AgentloomError } from '../../core/errors.js';
import { loadEnv, type EnvConfig } from '../../config/env.js';
import { logGroup, optionalAppsGroup } from '../../config/process-config.js';
import {
  configError,
  parseSettings,
  settingsGroup,
  type FlagsOf,
  type SettingsOf,
} from '../../config/settings.js';
import { loadRegistries } from '../../engine/apps/apps-module.js';
import { startProcess } from '../../engine/process-lifecycle.js';
import { StepMetrics } from '../../workers/step-metrics.js';
import type { Engine } from '../../engine/engine.js';
import { UsageError } from '../terminal/cli-errors.js';
import { EXAMPLE_APP, EXAMPLE_INPUT, exampleApps } from './demo-app.js';
import { devSecretKey } from './dev-secret-key.js';
import { cliLine } from '../client/pending.js';
import { terminalLogger } from '../terminal/terminal-log.js';
import { runWalkthrough } from './walkthrough.js';

/** Where `dev` keeps its PGlite database unless `--data` says otherwise (kept across restarts). */
export const DEFAULT_DEV_DATA = '.agentloom/data';

/** What only `dev` sets: its PGlite directory, the walkthrough and the key it sends, the models it offers. */
const devGroup = settingsGroup({
  fields: {
    dataDir: z.string().refine((dir) => dir.trim() !== '', '--data must name a directory'),
    walkthrough: z.boolean(),
    /** The key the walkthrough sends to its own API when keys are configured (AGENTLOOM_API_KEY). */
    clientKey: z.string().optional(),
    /** Whether the example app runs on Gemini (a key is set) or on scripted models. */
    gemini: z.boolean(),
    /** A module exporting `tools` / `models` the YAML apps of `--apps` name. */
    registry: z.string().min(1, '--registry must name a module').optional(),
    /** AGENTLOOM_SECRET_KEY; unset: the key in `<dataDir>/secret.key`, made on the first start. */
    secretKey: z.string().optional(),
  },
  // `apps`: the check says whether to leave out the flag or the variable.
  read: (
    flags: { data?: string; walkthrough?: boolean; apps?: string; registry?: string },
    env: EnvConfig,
  ) => ({
    dataDir: flags.data ?? DEFAULT_DEV_DATA,
    registry: flags.registry,
    walkthrough: flags.walkthrough ?? false,
    clientKey: env.AGENTLOOM_API_KEY,
    gemini: Boolean(env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY),
    secretKey: env.AGENTLOOM_SECRET_KEY,
  }),
  // Reported with a bad --port or --data too: it reads only flags and AGENTLOOM_APPS, valid whatever they hold.
  checkAlways: true,
  check: (settings, ctx, { flags }) => {
    if (settings.registry !== undefined && settings.apps === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['registry'],
        message:
          '--registry names what the apps of --apps use: pass --apps PATH too, or leave out --registry',
      });
    }
    if (settings.walkthrough && settings.apps !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['walkthrough'],
        message: `--walkthrough runs the example app: leave out --apps${flags.apps === undefined ? ' and unset AGENTLOOM_APPS' : ''}`,
      });
    }
  },
});

/** `apps` undefined: the example app. */
const devGroups = [optionalAppsGroup, httpGroup, logGroup('warn'), devGroup] as const;

/** Flags of `agentloom dev` as commander gives them. */
export type DevFlags = FlagsOf<typeof devGroups>;

/** The resolved configuration of `agentloom dev`. */
export type DevConfig = SettingsOf<typeof devGroups>;

/**
 * Resolves flags, then environment, listing every problem at once, each saying what to write: bad usage (exit 2),
 * unless the one problem is AGENTLOOM_API_KEYS: a bad environment (CONFIG, exit 1), as env.ts's problems are.
 */
export function devConfig(flags: DevFlags, env: EnvConfig = loadEnv()): DevConfig {
  return parseSettings(
    'dev',
    devGroups,
    { flags, env },
    {
      invalid: (message, problems) =>
        problems.every((p) => p.field === 'apiKeys')
          ? configError(message, problems)
          : new UsageError(message),
    },
  );
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
function printBanner(config: DevConfig, engine: Engine, url: string, devUi: string | undefined): void {
  const apps = [...engine.apps.keys()];
  const example = config.apps === undefined;
  const models = config.gemini ? 'Gemini (gemini-2.5-flash)' : 'scripted models, offline';
  const app = example ? EXAMPLE_APP : (apps[0] ?? 'APP');
  const input = example ? EXAMPLE_INPUT : 'your input';
  // One write: a reader that has seen the first line sees the rest with it.
  console.log(
    [
      `agentloom dev: listening on ${url}`,
      example
        ? `  app   ${EXAMPLE_APP} (the example: parallel research → draft/critique loop → publish with a human's confirmation; ${models})`
        : `  apps  ${apps.join(', ')} (from ${config.apps})`,
      `  web   ${url}/ (the console: runs, run pages with live events, the approvals inbox)`,
      `  adk   ${adkLine(config, url, devUi)}`,
      `  data  ${config.dataDir} (PGlite, kept across restarts; --data DIR to move it)`,
      `  auth  ${config.apiKeys.length > 0 ? 'API keys of AGENTLOOM_API_KEYS' : 'none: loopback only'}`,
      `  try   ${cliLine(['run', app, input, '--follow'], { url })}`,
    ].join('\n'),
  );
}

/** Where ADK's dev UI is, or why it is not served. */
function adkLine(config: DevConfig, url: string, devUi: string | undefined): string {
  if (config.apiKeys.length > 0) return "ADK's dev UI is off: it sends no API key (unset AGENTLOOM_API_KEYS)";
  if (devUi === undefined) return `npm install ${ADK_DEVTOOLS_PACKAGE} to get ADK's dev UI at ${url}/dev-ui/`;
  return `${url}/dev-ui/ (ADK's dev UI, from ${ADK_DEVTOOLS_PACKAGE})`;
}

/** Starts `dev` from its configuration and installs the signal handlers. */
export async function runDev(config: DevConfig): Promise<RunningDev> {
  // The worker's step metrics are served by the API's /metrics (the API registry has the process metrics).
  const stepMetrics = new StepMetrics({ processMetrics: false });
  const walkthrough = new AbortController();
  const devUi = config.apiKeys.length > 0 ? undefined : findAdkDevUi();
  const registries = config.registry === undefined ? {} : await loadRegistries(config.registry);
  const logger = terminalLogger(config.logLevel);
  // Tools that declare `auth` need a key to seal users' credentials: dev makes one rather than refusing to start.
  const secretKey = config.secretKey ?? devSecretKey(config.dataDir, logger);
  const {
    engine,
    served,
    shutdown,
    logger: log,
  } = await startProcess({
    name: 'dev',
    logLevel: config.logLevel,
    logger,
    engine: {
      apps: config.apps ?? exampleApps(config.gemini),
      ...registries,
      database: { pglite: config.dataDir },
      secretKey,
      // An OAuth2 provider sends the user back to this server's callback, unless told another address.
      publicUrl:
        process.env.AGENTLOOM_PUBLIC_URL ?? (config.port > 0 ? `http://127.0.0.1:${config.port}` : undefined),
      queue: 'local',
      observer: stepMetrics.observer,
    },
    serve: async (engine, logger) => {
      const api = await serveApi(engine, {
        apiKeys: config.apiKeys,
        port: config.port,
        logger,
        metricsRegistries: [stepMetrics.registry],
        ...(devUi !== undefined ? { adkDevUiDir: devUi } : {}),
      }).catch((err: unknown) => {
        if (!isAddressInUse(err)) throw err;
        throw new AgentloomError(
          'CONFIG',
          `port ${config.port} is in use (another agentloom dev?): pass --port N, or --port 0 for any free port`,
          { cause: err },
        );
      });
      return {
        url: api.url,
        close: async () => {
          walkthrough.abort();
          await api.close();
        },
      };
    },
  });
  const { url } = served;
  printBanner(config, engine, url, devUi);
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
