/**
 * The client commands of the CLI (CONTRACT.md "Command line"): `run`, `status`, `events`, `approve`, `reject`,
 * `respond`, `cancel`, `retry`. Each talks to the HTTP API at `--url` / `AGENTLOOM_URL` with `--api-key` /
 * `AGENTLOOM_API_KEY`, so they work against `agentloom dev` and `agentloom api` alike. Each action resolves with
 * its exit code: 0 completed / ok, 1 failed or cancelled, 2 bad usage, 3 paused (`status` too: the run's code).
 */
import type { Command } from 'commander';
import type { InvocationJson } from '../../api/http/schemas.js';
import { ApiClient, clientConfig, DEFAULT_API_URL, type ClientFlags } from './api-client.js';
import { describeError, EXIT, exitCodeOfStatus, UsageError } from '../terminal/cli-errors.js';
import { followInvocation } from './follow.js';
import { formatEvent } from '../terminal/format.js';
import { answerLines, cliLine, describePending, type HintOptions } from './pending.js';
import { Progress } from '../terminal/progress.js';
import { printStatus } from './status.js';

/** Runs a command action and stores its exit code (errors go to main's handler). */
type Action<A extends unknown[]> = (...args: A) => Promise<number>;
export const exitWith =
  <A extends unknown[]>(action: Action<A>) =>
  async (...args: A): Promise<void> => {
    process.exitCode = await action(...args);
  };

/** A client of the API the flags (then the environment) name. */
export function clientOf(flags: ClientFlags): ApiClient {
  return new ApiClient(clientConfig(flags));
}

function hintsOf(client: ApiClient): HintOptions {
  return { url: client.config.url };
}

/** Parses a JSON argument, or explains what to write (bad usage). */
function parseJsonArgument(text: string, what: string, example: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} must be JSON, e.g. ${example}; got ${JSON.stringify(text)}`);
  }
}

/** Prints how a followed run ended and returns its exit code. */
async function reportEnd(client: ApiClient, id: string, status: string): Promise<number> {
  const view = await client.invocation(id);
  if (status === 'completed') console.log(`completed: ${view.output ?? '(no output)'}`);
  else if (status === 'failed') {
    console.log(
      `failed: ${view.error ? `${view.error.code}: ${view.error.message}` : '(no error recorded)'}`,
    );
  } else if (status === 'paused') {
    const calls = view.pending;
    console.log(`paused: waiting for ${calls.length === 1 ? '1 call' : `${calls.length} calls`}`);
    for (const call of calls) {
      console.log(`  ${describePending(call)}`);
      for (const line of answerLines(id, call, hintsOf(client), '    ')) console.log(line);
    }
    console.log(`  then follow it again: ${cliLine(['events', id, '--follow'], hintsOf(client))}`);
  } else console.log(status);
  return exitCodeOfStatus(status);
}

/** Streams a run's events from `after` until it settles or pauses; returns its exit code. */
async function followAndReport(client: ApiClient, id: string, after: number): Promise<number> {
  const progress = new Progress();
  let received = 0;
  progress.spin(`waiting for events of ${id}`);
  let status: string;
  try {
    ({ status } = await followInvocation(
      client,
      id,
      { after, partial: progress.interactive },
      {
        onEvent: (event) => {
          received++;
          progress.line(formatEvent(event));
          progress.spin(`running · ${received} events · last from ${event.author}`);
        },
        onPartial: (event) => {
          const text = (event.content?.parts ?? []).map((p) => p.text ?? '').join('');
          progress.spin(`${event.author}: ${JSON.stringify(text).slice(1, -1).slice(-80)}`);
        },
        onReconnect: (attempt, err) =>
          progress.note(`(event stream lost: ${describeError(err)}; resuming, attempt ${attempt})`),
      },
    ));
  } finally {
    progress.stop();
  }
  return reportEnd(client, id, status);
}

function wholeNumber(text: string, flag: string): number {
  if (!/^\d{1,15}$/.test(text))
    throw new UsageError(`${flag} must be a whole number (an event seq), e.g. ${flag} 12`);
  return Number(text);
}

/** One line saying what an answer did, and how to follow the run on. */
export function answered(client: ApiClient, what: string, view: InvocationJson): void {
  console.log(
    `${what}; ${view.id} is ${view.status} — follow it: ${cliLine(['events', view.id, '--follow'], hintsOf(client))}`,
  );
}

/** Adds `--url` and `--api-key` to a client command. */
export function withClientFlags(command: Command): Command {
  return command
    .option('--url <url>', `address of the agentloom API (default $AGENTLOOM_URL, else ${DEFAULT_API_URL})`)
    .option('--api-key <key>', 'sent as Authorization: Bearer <key> (default $AGENTLOOM_API_KEY)');
}

/** Registers the client commands on `program`. */
export function registerClientCommands(program: Command): void {
  withClientFlags(program.command('run'))
    .description('enqueue an invocation of APP with INPUT and print its id; with --follow, stream its events')
    .argument('<app>', 'the app to run')
    .argument('<input>', 'the user message')
    .option('--user <id>', 'the user the session belongs to', 'cli')
    .option('--session <id>', 'continue this session (default: a new one)')
    .option('--follow', 'stream its events until it settles or pauses, and exit with its code (0, 1, 3)')
    .action(
      exitWith(
        async (
          app: string,
          input: string,
          o: ClientFlags & { user: string; session?: string; follow?: boolean },
        ) => {
          const client = clientOf(o);
          const created = await client.enqueue(app, {
            userId: o.user,
            input,
            ...(o.session === undefined ? {} : { sessionId: o.session }),
          });
          if (!o.follow) {
            console.log(created.invocationId);
            return EXIT.ok;
          }
          console.log(`invocation ${created.invocationId}  app ${app}  session ${created.sessionId}`);
          return followAndReport(client, created.invocationId, 0);
        },
      ),
    );

  withClientFlags(program.command('status'))
    .description(
      'show an invocation: its status, the definition it needs, its node tree and pending calls; exit with the ' +
        "run's code: 0 completed (or still queued or running), 1 failed or cancelled, 3 paused",
    )
    .argument('<id>', 'the invocation id')
    .action(
      exitWith(async (id: string, o: ClientFlags) => {
        const view = await printStatus(clientOf(o), id);
        return exitCodeOfStatus(view.status);
      }),
    );

  withClientFlags(program.command('events'))
    .description("print an invocation's events; with --follow, stream them until it settles or pauses")
    .argument('<id>', 'the invocation id')
    .option('--follow', 'stream until the run settles or pauses, and exit with its code (0, 1, 3)')
    .option('--after <seq>', 'only events after this seq')
    .action(
      exitWith(async (id: string, o: ClientFlags & { follow?: boolean; after?: string }) => {
        const after = o.after === undefined ? 0 : wholeNumber(o.after, '--after');
        const client = clientOf(o);
        if (o.follow) return followAndReport(client, id, after);
        for (let next: number | null = after; next !== null;) {
          const page = await client.events(id, next);
          for (const event of page.events) console.log(formatEvent(event));
          next = page.nextAfter;
        }
        return EXIT.ok;
      }),
    );

  withClientFlags(program.command('approve'))
    .description('confirm a call awaiting confirmation (CALL: the callId `status` lists as pending)')
    .argument('<id>', 'the invocation id')
    .argument('<call>', 'the pending call id')
    .option('--payload <json>', 'JSON handed to the tool with the confirmation, e.g. \'{"amount": 10}\'')
    .action(
      exitWith(async (id: string, call: string, o: ClientFlags & { payload?: string }) => {
        const payload =
          o.payload === undefined ? undefined : parseJsonArgument(o.payload, '--payload', `'{"amount": 10}'`);
        const client = clientOf(o);
        const view = await client.confirm(id, call, {
          confirmed: true,
          ...(payload === undefined ? {} : { payload }),
        });
        answered(client, `approved ${call}`, view);
        return EXIT.ok;
      }),
    );

  withClientFlags(program.command('reject'))
    .description(
      'reject a call awaiting confirmation: the tool does not run, the agent is told it was rejected',
    )
    .argument('<id>', 'the invocation id')
    .argument('<call>', 'the pending call id')
    .action(
      exitWith(async (id: string, call: string, o: ClientFlags) => {
        const client = clientOf(o);
        answered(client, `rejected ${call}`, await client.confirm(id, call, { confirmed: false }));
        return EXIT.ok;
      }),
    );

  withClientFlags(program.command('respond'))
    .description('answer a long-running (or in-doubt) call with a JSON object: the function response')
    .argument('<id>', 'the invocation id')
    .argument('<call>', 'the pending call id')
    .argument('<json>', 'the response, a JSON object, e.g. \'{"status": "approved"}\'')
    .action(
      exitWith(async (id: string, call: string, json: string, o: ClientFlags) => {
        const example = `'{"status": "approved"}'`;
        const response = parseJsonArgument(json, 'the response', example);
        if (typeof response !== 'object' || response === null || Array.isArray(response)) {
          throw new UsageError(`the response must be a JSON object, e.g. ${example}; got ${json}`);
        }
        const client = clientOf(o);
        answered(
          client,
          `answered ${call}`,
          await client.respond(id, call, response as Record<string, unknown>),
        );
        return EXIT.ok;
      }),
    );

  withClientFlags(program.command('cancel'))
    .description(
      'cancel an invocation: unfinished steps stop, running model and tool calls see their signal abort',
    )
    .argument('<id>', 'the invocation id')
    .action(
      exitWith(async (id: string, o: ClientFlags) => {
        const view = await clientOf(o).cancel(id);
        if (view.status === 'cancelled') {
          console.log(`cancelled ${id}`);
          return EXIT.ok;
        }
        console.error(`agentloom: ${id} had already ended (${view.status}): nothing to cancel`);
        return EXIT.failed;
      }),
    );

  withClientFlags(program.command('retry'))
    .description(
      'run a failed or cancelled invocation again from its checkpoints (stored calls are not repeated)',
    )
    .argument('<id>', 'the invocation id')
    .option('--budget <json>', "raise the run's budget first, field by field (e.g. '{\"tokens\": 5000}')")
    .action(
      exitWith(async (id: string, o: ClientFlags & { budget?: string }) => {
        const client = clientOf(o);
        const budget =
          o.budget === undefined ? undefined : parseJsonArgument(o.budget, '--budget', `'{"tokens": 5000}'`);
        if (
          budget !== undefined &&
          (typeof budget !== 'object' || budget === null || Array.isArray(budget))
        ) {
          throw new UsageError(`--budget must be a JSON object such as '{"tokens": 5000}'`);
        }
        const body = budget === undefined ? undefined : { budget: budget as Record<string, unknown> };
        answered(client, `retrying ${id}`, await client.retry(id, body));
        return EXIT.ok;
      }),
    );
}
