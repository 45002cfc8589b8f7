/** The agentloom command line. */
import { Command } from 'commander';

const program = new Command('agentloom').description('A durable workflow engine for ADK-style AI agents');

program
  .command('demo')
  .description('run the reference pipeline offline (embedded engine, scripted models)')
  .action(() => {
    console.log('agentloom: the embedded runtime is not built yet; the demo pipeline arrives with it.');
  });

await program.parseAsync(process.argv);
