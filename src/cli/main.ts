/**
 * The agentloom command line. Exit codes (CONTRACT.md "Command line"): 0 completed / ok, 1 failed or invalid,
 * 2 bad usage, 3 paused. The engine, the store and the HTTP framework are imported by the commands that use them,
 * so the client commands (which only speak HTTP) start fast.
 */
import { Command, CommanderError } from 'commander';
import { AgentloomError } from '../core/errors.js';
import { loadEnv } from '../config/env.js';
import type { WorkerFlags } from '../config/worker-config.js';
import { describeError, EXIT, exitCodeOfError } from './terminal/cli-errors.js';
import { registerAuthCommands } from './client/auth-commands.js';
import { registerClientCommands } from './client/client-commands.js';
import { registerForkCommands } from './client/fork-commands.js';
import type { DevFlags } from './dev/dev.js';
import type { PruneFlags } from './prune.js';
import type { ValidateFlags } from './validate.js';

const program = new Command('agentloom')
  .description('A durable workflow engine for ADK-style AI agents')
  // Usage errors (unknown flag, missing argument) throw instead of exiting, so they exit 2; inherited by commands.
  .exitOverride()
  .showHelpAfterError();

program
  .command('demo')
  .description(
    'run the reference pipeline on an embedded engine (scripted models offline; Gemini with GEMINI_API_KEY)',
  )
  .option('--data <dir>', 'PGlite data directory (recreated)', '.agentloom/demo')
  .option('--topic <text>', 'what to write about')
  .action(async (opts: { data: string; topic?: string }) => {
    const { runDemo } = await import('./dev/demo.js');
    const status = await runDemo({ dataDir: opts.data, topic: opts.topic });
    process.exitCode = status === 'completed' ? 0 : 1;
  });

program
  .command('migrate')
  .description(
    'apply database migrations (PostgreSQL from --database or DATABASE_URL, or PGlite with --data)',
  )
  .option('--database <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
  .option('--data <dir>', 'PGlite data directory instead of PostgreSQL')
  .action(async (opts: { database?: string; data?: string }) => {
    const url = opts.database ?? loadEnv().DATABASE_URL;
    if (!url && !opts.data) {
      throw new AgentloomError(
        'CONFIG',
        'migrate needs a database: set DATABASE_URL, or pass --database postgres://… or --data DIR',
      );
    }
    const { migrate, openDatabase } = await import('../store/index.js');
    const database = await openDatabase(opts.data ? { pglite: opts.data } : (url as string));
    try {
      const applied = await migrate(database);
      console.log(
        applied.length === 0 ? 'migrate: schema is up to date' : `migrate: applied ${applied.join(', ')}`,
      );
    } finally {
      await database.close();
    }
  });

program
  .command('worker')
  .description(
    'run steps: a stateless worker on PostgreSQL (DATABASE_URL) and BullMQ on Redis (REDIS_URL) or on PostgreSQL',
  )
  .option(
    '--apps <path>',
    'module exporting `apps` (and optionally `tools`, `models`); default $AGENTLOOM_APPS',
  )
  .option('--concurrency <n>', 'steps run at once by this process (default 64)')
  .option('--queue <kind>', "'redis' (default) or 'postgres' (BullMQ on PostgreSQL, no Redis)")
  .option(
    '--lease-ms <ms>',
    "step lease; a dead worker's step is taken over after it (default $AGENTLOOM_LEASE_MS or 15000)",
  )
  .option(
    '--grace-ms <ms>',
    'on SIGTERM, how long running steps may finish before they are released (default 30000)',
  )
  .option(
    '--metrics-port <n>',
    'serve Prometheus metrics of its steps, model and tool calls on this port at /metrics (default $AGENTLOOM_METRICS_PORT; none when unset)',
  )
  .action(async (opts: WorkerFlags) => {
    const { workerConfig } = await import('../config/worker-config.js');
    const { runWorker } = await import('../workers/worker.js');
    const config = workerConfig(opts);
    await (await import('./tracing-sdk.js')).startTracing();
    await runWorker(config);
  });

program
  .command('api')
  .description(
    'serve the HTTP API (runs no steps: start workers for that) on PostgreSQL (DATABASE_URL) and BullMQ on Redis (REDIS_URL) or on PostgreSQL',
  )
  .option(
    '--port <n>',
    'port to listen on (default $PORT or 8080); without AGENTLOOM_API_KEYS, on loopback only',
  )
  .option(
    '--apps <path>',
    'the apps module (or YAML file / folder) the workers serve; default $AGENTLOOM_APPS',
  )
  .option('--queue <kind>', "'redis' (default) or 'postgres' (BullMQ on PostgreSQL, no Redis)")
  .action(async (opts: { port?: string; apps?: string; queue?: string }) => {
    // Loaded here so that the other commands do not load the HTTP framework.
    const { apiConfig, runApi } = await import('../api/index.js');
    const config = apiConfig(opts);
    await (await import('./tracing-sdk.js')).startTracing();
    await runApi(config);
  });

program
  .command('prune')
  .description(
    'delete ended runs (completed, failed, cancelled; never queued, running or paused) that ended longer ago than --older-than, with their events, nodes and answered requests; a session goes with its last run',
  )
  .requiredOption('--older-than <duration>', 'e.g. 30d, 12h, 90m')
  .option('--app <name>', "only this app's runs")
  .option(
    '--status <list>',
    'only runs in these statuses, comma-separated (default completed,failed,cancelled)',
  )
  .option('--dry-run', 'count what would be deleted; delete nothing')
  .option('--batch-size <n>', 'runs per transaction (default 200)')
  .option('--database <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
  .option('--data <dir>', 'PGlite data directory instead of PostgreSQL')
  .action(async (opts: PruneFlags) => {
    const { runPrune } = await import('./prune.js');
    process.exitCode = await runPrune(opts);
  });

program
  .command('validate')
  .description(
    'check apps as dev/worker --apps PATH load them, tool and model names included: a JS/TS apps module (its apps, agents, tools, models, rateLimits; exit 1 with every problem as path: message), or declarative apps (agentloom YAML or kagent Agent manifests; exit 1 with every problem as file:line:col: path: message)',
  )
  .argument('<path>', 'a .js / .ts apps module, a .yaml / .yml file or a folder of them')
  .option(
    '--registry <module>',
    'a JS/TS module exporting `tools` and/or `models` (e.g. your apps module): names the apps may use besides the built-in tools, provider model ids (an apps module adds its own exports)',
  )
  .option(
    '--no-env',
    'an environment variable the files name (a secret: valueFrom, apiKeySecretKey) that is not set here is a warning, not a problem',
  )
  .action(async (path: string, opts: ValidateFlags) => {
    const { runValidate } = await import('./validate.js');
    process.exitCode = await runValidate(path, opts);
  });

program
  .command('dev')
  .description(
    'everything in one process, no servers needed: PGlite + in-process queue + HTTP API + worker; serves --apps, or the example app',
  )
  .option(
    '--apps <path>',
    'a module exporting `apps` (and optionally `tools`, `models`), a YAML file or a folder of them; default $AGENTLOOM_APPS, else the example app',
  )
  .option(
    '--port <n>',
    'port to listen on (default $PORT or 8080; 0: any free port); without AGENTLOOM_API_KEYS, on loopback only',
  )
  .option(
    '--registry <module>',
    'a JS/TS module exporting `tools` and/or `models` that YAML apps (--apps PATH) name, e.g. a scripted model for a kagent ModelConfig',
  )
  .option('--data <dir>', 'PGlite data directory, kept across restarts (default .agentloom/data)')
  .option(
    '--walkthrough',
    'enqueue one run of the example app through the API, print its live events and how to approve its pause (npm start)',
  )
  .action(async (opts: DevFlags) => {
    const { devConfig, runDev } = await import('./dev/dev.js');
    const config = devConfig(opts);
    await (await import('./tracing-sdk.js')).startTracing();
    await runDev(config);
  });

registerClientCommands(program);
registerAuthCommands(program);
registerForkCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Commander has printed the problem and the command's usage. Asked-for help or version: ok; else bad usage.
    const asked = err.code === 'commander.helpDisplayed' || err.code === 'commander.version';
    process.exitCode = asked ? EXIT.ok : EXIT.usage;
  } else {
    // One plain line, never a stack trace: the message says what to do.
    console.error(`agentloom: ${describeError(err)}`);
    process.exitCode = exitCodeOfError(err);
  }
}
