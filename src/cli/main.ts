/** The agentloom command line. */
import { Command } from 'commander';
import { AgentloomError } from '../core/errors.js';
import { runDemo } from './demo.js';

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
