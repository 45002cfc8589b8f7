/** The agentloom command line. */
import { Command } from 'commander';
import { AgentloomError } from '../core/errors.js';
import { loadEnv } from '../config/env.js';
import { migrate, openDatabase } from '../store/index.js';
import { workerConfig, type WorkerFlags } from '../config/worker-config.js';
import { runWorker } from '../workers/worker.js';
import { runDemo } from './demo.js';
import { printStatus } from './status.js';
import { runValidate, type ValidateFlags } from './validate.js';

const program = new Command('agentloom').description('A durable workflow engine for ADK-style AI agents');

program
  .command('demo')
  .description(
    'run the reference pipeline on an embedded engine (scripted models offline; Gemini with GEMINI_API_KEY)',
  )
  .option('--data <dir>', 'PGlite data directory (recreated)', '.agentloom/demo')
  .option('--topic <text>', 'what to write about')
  .action(async (opts: { data: string; topic?: string }) => {
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
  .command('status <id>')
  .description(
    'show an invocation: its status, the definition hash it needs, its node tree and pending calls',
  )
  .option('--database <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
  .action(async (id: string, opts: { database?: string }) => {
    const url = opts.database ?? loadEnv().DATABASE_URL;
    if (!url) {
      throw new AgentloomError(
        'CONFIG',
        'status needs a database: set DATABASE_URL, or pass --database postgres://…',
      );
    }
    await printStatus(url, id);
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
  .action(async (opts: WorkerFlags) => {
    await runWorker(workerConfig(opts));
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
    await runApi(apiConfig(opts));
  });

program
  .command('validate')
  .description(
    'check declarative apps (agentloom YAML or kagent Agent manifests); exit 1 with every problem as file:line:col: path: message',
  )
  .argument('<path>', 'a .yaml / .yml file or a folder of them')
  .option(
    '--registry <module>',
    'a JS/TS module exporting `tools` and/or `models` (e.g. your apps module): names the files use are checked against them',
  )
  .action(async (path: string, opts: ValidateFlags) => {
    process.exitCode = await runValidate(path, opts);
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const message =
    err instanceof AgentloomError
      ? `${err.code}: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
  console.error(`agentloom: ${message}`);
  process.exitCode = 1;
}
