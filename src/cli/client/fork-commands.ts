/**
 * Fork, replay and diff commands of the CLI (CONTRACT.md "Command line"), through the HTTP API as the
 * other client commands: `fork ID --at PATH [--state JSON] [--instruction AGENT=TEXT]… [--input TEXT]
 * [--definition current]`.
 */
import type { Command } from 'commander';
import { EXIT, UsageError } from '../terminal/cli-errors.js';
import { clientOf, exitWith, withClientFlags } from './client-commands.js';
import type { ApiClient, ClientFlags } from './api-client.js';
import type { DiffJson, ReplayJson } from '../../api/http/fork-schemas.js';
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

/** Prints a replay's result; 0 when it did not diverge, 1 when it did. */
function printReplay(id: string, result: ReplayJson): number {
  if (!result.diverged) {
    console.log(`${id}: same (replay ${result.replayId})`);
    return EXIT.ok;
  }
  console.log(`${id}: diverged at ${result.nodePath ?? '?'} (replay ${result.replayId})`);
  console.log(`  ${result.message ?? ''}`);
  console.log(`  expected: ${JSON.stringify(result.expected)}`);
  console.log(`  actual:   ${JSON.stringify(result.actual)}`);
  return EXIT.failed;
}

/** The ids of an app's latest `last` completed runs that are not themselves forks or replays. */
async function latestRuns(client: ApiClient, app: string, last: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.list({ app, status: 'completed', limit: 200, ...(cursor ? { cursor } : {}) });
    for (const inv of page.invocations) if (!inv.forkedFrom && ids.length < last) ids.push(inv.id);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && ids.length < last);
  return ids;
}

type Side = DiffJson['nodes'][number]['a'];

const cell = (side: Side): string =>
  side
    ? `${side.status} · ${side.modelCalls} model${side.tokens === null ? '' : ` (${side.tokens} tokens)`} · ${side.toolCalls.map((c) => c.name).join(',') || 'no tools'} · ${Math.round(side.durationMs)} ms`
    : '—';

/** Prints a diff as aligned rows, the first divergence marked `>>`, then both sides of it. */
function printDiff(diff: DiffJson): void {
  const width = Math.max(4, ...diff.nodes.map((n) => n.path.length));
  console.log(`${'  node'.padEnd(width + 2)}  A ${diff.a.id}  |  B ${diff.b.id}`);
  for (const row of diff.nodes) {
    const mark = row.path === diff.firstDivergence ? '>>' : row.same ? '  ' : ' ~';
    console.log(`${mark}${row.path.padEnd(width)}  ${cell(row.a)}  |  ${cell(row.b)}`);
  }
  const first = diff.nodes.find((n) => n.path === diff.firstDivergence);
  if (!first) {
    console.log('no divergence');
    return;
  }
  console.log(`first divergence: ${first.path}`);
  for (const [name, side] of [
    ['A', first.a],
    ['B', first.b],
  ] as const) {
    console.log(
      `  ${name}: ${side ? `${side.status}, output ${JSON.stringify(side.output)}, tool calls ${JSON.stringify(side.toolCalls)}` : 'did not run'}`,
    );
  }
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

  withClientFlags(program.command('replay'))
    .description(
      'replay recorded runs on the current code with their recorded model and tool answers (no call is made); print the first divergence of each',
    )
    .argument('[id]', 'the invocation to replay')
    .option('--app <app>', "replay the app's latest completed runs")
    .option('--last <n>', 'how many of them (with --app)', '20')
    .action(
      exitWith(async (id: string | undefined, o: ClientFlags & { app?: string; last: string }) => {
        if ((id === undefined) === (o.app === undefined)) {
          throw new UsageError('replay takes an invocation id, or --app APP [--last N]; not both');
        }
        const last = Number(o.last);
        if (!Number.isInteger(last) || last < 1) {
          throw new UsageError(`--last takes a whole number ≥ 1; got ${JSON.stringify(o.last)}`);
        }
        const client = clientOf(o);
        const ids = id !== undefined ? [id] : await latestRuns(client, o.app as string, last);
        if (ids.length === 0) {
          console.error(`agentloom: app ${o.app ?? ''} has no completed runs to replay`);
          return EXIT.failed;
        }
        let diverged = 0;
        for (const each of ids) if (printReplay(each, await client.replay(each)) !== EXIT.ok) diverged++;
        if (ids.length > 1) console.log(`${ids.length - diverged} of ${ids.length} replayed the same`);
        return diverged > 0 ? EXIT.failed : EXIT.ok;
      }),
    );

  withClientFlags(program.command('diff'))
    .description(
      'compare two runs node by node (status, output, tool calls, model calls, time), aligned by node path; the first divergence is marked >>',
    )
    .argument('<a>', 'an invocation id')
    .argument('<b>', 'another invocation id (e.g. a fork or replay of A)')
    .action(
      exitWith(async (a: string, b: string, o: ClientFlags) => {
        const diff = await clientOf(o).diff(a, b);
        printDiff(diff);
        return diff.firstDivergence === null ? EXIT.ok : EXIT.failed;
      }),
    );
}
