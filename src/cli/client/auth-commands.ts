/**
 * The credential commands of the CLI (CONTRACT.md "Command line"), through the HTTP API as the other client
 * commands: `auth ID CALL (--token T | --api-key K | --callback-url URL)` answers an `auth` pause with the
 * credential it asks for; `credentials list|delete --user U [--app A] [--key K]` shows (never the secrets) and
 * deletes a user's stored credentials, with a key that sees every app. No secret given is ever printed.
 */
import type { Command } from 'commander';
import type { CredentialJson } from '../../api/http/credential-schemas.js';
import { AgentloomError } from '../../core/errors.js';
import { REQUEST_CREDENTIAL } from '../../agents/llm/journal.js';
import { DEFAULT_API_URL, type ClientFlags } from './api-client.js';
import { authAnswer, type AuthFlags } from './auth-answer.js';
import { EXIT, UsageError } from '../terminal/cli-errors.js';
import { answered, clientOf, exitWith, withClientFlags } from './client-commands.js';
import { answerLines } from './pending.js';

/** Answers an `auth` pause: reads the pending call's scheme, sends the answer it takes. */
async function answerAuth(id: string, callId: string, o: AuthFlags & { url?: string }): Promise<number> {
  // --api-key is the tool's key here: the API's key comes from AGENTLOOM_API_KEY.
  const client = clientOf({ ...(o.url === undefined ? {} : { url: o.url }) });
  const view = await client.invocation(id);
  const call = view.pending.find((p) => p.callId === callId);
  if (!call) {
    const pending = view.pending.map((p) => `${p.callId} (${p.kind})`).join(', ');
    throw new AgentloomError(
      'NOT_FOUND',
      `${id} (${view.status}) has no pending call ${callId}${pending ? `; pending: ${pending}` : ''}`,
      { details: { invocationId: id, callId } },
    );
  }
  if (call.kind !== 'auth') {
    const how = answerLines(id, call, { url: client.config.url }, '').join('; ');
    throw new UsageError(`call ${callId} waits for a ${call.kind}, not a credential: ${how}`);
  }
  const { response, what } = authAnswer(call, o);
  const after = await client.respond(id, callId, response, REQUEST_CREDENTIAL);
  const key =
    typeof call.auth?.credentialKey === 'string' ? ` (stored encrypted as "${call.auth.credentialKey}")` : '';
  answered(client, `answered ${callId} with ${what}${key}`, after);
  return EXIT.ok;
}

/** Prints credentials as aligned columns, or says there are none. */
function printCredentials(user: string, rows: CredentialJson[]): void {
  if (rows.length === 0) {
    console.log(`no credentials stored for user ${user}`);
    return;
  }
  const table = [
    ['app', 'credential key', 'type', 'expires', 'updated'],
    ...rows.map((r) => [r.app, r.credentialKey, r.authType, r.expiresAt ?? 'never', r.updatedAt]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

/** Registers `auth` and `credentials list|delete` on `program`. */
export function registerAuthCommands(program: Command): void {
  program
    .command('auth')
    .description(
      'answer an `auth` pause (CALL: the callId `status` lists) with the credential it asks for: --api-key for an ' +
        'API key, --token for a bearer or OAuth2 access token, --callback-url for the URL an OAuth2 provider ' +
        "redirected to. The key of the agentloom API comes from $AGENTLOOM_API_KEY here (--api-key is the tool's)",
    )
    .argument('<id>', 'the invocation id')
    .argument('<call>', 'the pending call id')
    .option('--api-key <key>', "the tool's API key (stored encrypted for the run's user)")
    .option(
      '--token <token>',
      'an HTTP bearer token, or an OAuth2 access token when the call asks for OAuth2',
    )
    .option('--callback-url <url>', 'the full URL (with state and code) the OAuth2 provider redirected to')
    .option('--url <url>', `address of the agentloom API (default $AGENTLOOM_URL, else ${DEFAULT_API_URL})`)
    .action(exitWith(answerAuth));

  const credentials = program
    .command('credentials')
    .description("a user's stored tool credentials: list (keys, types, expiry; never secrets) or delete");

  withClientFlags(credentials.command('list'))
    .description("list a user's stored credentials (needs a key that sees every app)")
    .requiredOption('--user <id>', 'whose credentials')
    .option('--app <app>', 'only those of this app')
    .action(
      exitWith(async (o: ClientFlags & { user: string; app?: string }) => {
        const rows = await clientOf(o).credentials({
          userId: o.user,
          ...(o.app === undefined ? {} : { app: o.app }),
        });
        printCredentials(o.user, rows);
        return EXIT.ok;
      }),
    );

  withClientFlags(credentials.command('delete'))
    .description(
      "delete a user's stored credentials (all, those of --app, or the one under --key): their tools ask again",
    )
    .requiredOption('--user <id>', 'whose credentials')
    .option('--app <app>', 'only those of this app')
    .option('--key <key>', 'only the one under this credential key')
    .action(
      exitWith(async (o: ClientFlags & { user: string; app?: string; key?: string }) => {
        const deleted = await clientOf(o).deleteCredentials({
          userId: o.user,
          ...(o.app === undefined ? {} : { app: o.app }),
          ...(o.key === undefined ? {} : { credentialKey: o.key }),
        });
        const scope = `${o.app === undefined ? '' : ` in ${o.app}`}${o.key === undefined ? '' : ` under "${o.key}"`}`;
        console.log(
          deleted === 0
            ? `no credentials of user ${o.user}${scope}: nothing deleted`
            : `deleted ${deleted} credential${deleted === 1 ? '' : 's'} of user ${o.user}${scope}`,
        );
        return EXIT.ok;
      }),
    );
}
