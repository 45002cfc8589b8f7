/**
 * Fork, replay and diff commands of the CLI (CONTRACT.md "Command line", issue 36), through the HTTP API as the
 * other client commands: `fork ID --at PATH [--state JSON] [--instruction AGENT=TEXT]… [--input TEXT]
 * [--definition current]`.
 */
import type { Command } from 'commander';
import { EXIT, UsageError } from '../terminal/cli-errors.js';
import { clientOf, exitWith, withClientFlags } from './client-commands.js';
import type { ClientFlags } from './api-client.js';
import { cliLine } from './pending.js';

interface ForkFlags extends ClientFlags {
  at: string;
  state?: string;
  instruction: string[];
  input?: string;
  definition?: string;
}

/** `AGENT=TEXT` pairs as an object; bad usage naming the flag otherwise. */
export function instructionsOf(pairs: readonly string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      throw new UsageError(
        `--instruction takes AGENT=TEXT, e.g. --instruction "critic=Be strict."; got ${JSON.stringify(pair)}`,
      );
    }
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function stateOf(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`--state must be a JSON object, e.g. --state '{"approve": true}'; got ${text}`);
  }
  return parsed as Record<string, unknown>;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** Registers `fork` on `program`. */
export function registerForkCommands(program: Command): void {
  withClientFlags(program.command('fork'))
    .description(
      'fork a run at a node: a new run in a new session with the history up to there copied (no model or tool call) and run live from there with the changes',
    )
    .argument('<id>', 'the invocation to fork')
    .requiredOption('--at <path>', 'the node path to run again from, e.g. writer/refine/critic#1')
    .option('--state <json>', 'a state patch (a JSON object) applied when the fork starts')
    .option('--instruction <agent=text>', "replace an LlmAgent's instruction (repeatable)", collect, [])
    .option('--input <text>', 'replace the user message')
    .option(
      '--definition <which>',
      "'current': fork a run whose app changed since onto the current definition",
    )
    .action(
      exitWith(async (id: string, o: ForkFlags) => {
        if (o.definition !== undefined && o.definition !== 'current' && o.definition !== 'recorded') {
          throw new UsageError(
            `--definition takes 'current' or 'recorded'; got ${JSON.stringify(o.definition)}`,
          );
        }
        const state = stateOf(o.state);
        const instruction = instructionsOf(o.instruction);
        const client = clientOf(o);
        const result = await client.fork(id, {
          at: o.at,
          ...(state ? { state } : {}),
          ...(instruction ? { instruction } : {}),
          ...(o.input === undefined ? {} : { input: o.input }),
          ...(o.definition === undefined ? {} : { definition: o.definition as 'current' | 'recorded' }),
        });
        console.log(result.invocationId);
        console.error(
          `forked ${id} at ${o.at} (session ${result.sessionId}) — follow it: ${cliLine(['events', result.invocationId, '--follow'], { url: client.config.url })}`,
        );
        return EXIT.ok;
      }),
    );
}
