/**
 * How the CLI tells a person to answer a paused call: the exact `agentloom` command line (and `curl` line) for
 * each pending call, by kind — approve / reject a confirmation, respond to a long-running or in-doubt call, give
 * the credential an `auth` pause asks for.
 */
import type { PendingCall } from '../../engine/runs/views.js';
import { DEFAULT_API_URL } from './api-client.js';
import { describeScheme, flagsFor, schemeOf } from './auth-answer.js';

/** What the printed lines need besides the call. */
export interface HintOptions {
  /** The API's base URL; `--url` is added to CLI lines when it is not the default. */
  url: string;
  /** Added to each CLI line as it is (e.g. `--api-key "$AGENTLOOM_API_KEY"`) when requests need a key. */
  keyArgument?: string;
  /** Added to each curl line as it is (e.g. `-H "authorization: Bearer $AGENTLOOM_API_KEY"`). */
  keyHeader?: string;
}

const clip = (text: string, max = 100) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Quotes a word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  return /^[\w.:/@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** `npx agentloom <args> [--url U] [key]`, each argument quoted as the shell needs. */
export function cliLine(args: string[], o: HintOptions): string {
  const words = ['npx', 'agentloom', ...args.map(shellQuote)];
  if (o.url !== DEFAULT_API_URL) words.push('--url', shellQuote(o.url));
  if (o.keyArgument) words.push(o.keyArgument);
  return words.join(' ');
}

/** The `curl` line that answers a confirmation. */
export function curlConfirmLine(
  invocationId: string,
  callId: string,
  confirmed: boolean,
  o: HintOptions,
): string {
  const url = `${o.url}/v1/invocations/${encodeURIComponent(invocationId)}/confirmations/${encodeURIComponent(callId)}`;
  const key = o.keyHeader ? ` ${o.keyHeader}` : '';
  return `curl -X POST ${shellQuote(url)}${key} -H 'content-type: application/json' -d '{"confirmed":${confirmed}}'`;
}

/** One line describing a pending call: `confirmation of send({"to":"bob"}) at pipeline/sender (call …)`. */
export function describePending(call: PendingCall): string {
  const branch = call.branch ? ` [${call.branch}]` : '';
  return `${call.kind} of ${call.name}(${clip(JSON.stringify(call.args))}) at ${call.nodePath}${branch}`;
}

/**
 * What an `auth` pause asks for (the scheme, the key it is stored under), where to consent when it is an OAuth2
 * authorization, and the `agentloom auth` lines that answer it. The `auth` command takes the API's key from
 * AGENTLOOM_API_KEY only (its --api-key is the tool's key), so no key argument is added to these lines.
 */
function authLines(invocationId: string, call: PendingCall, o: HintOptions, indent: string): string[] {
  const scheme = schemeOf(call);
  const key = call.auth?.credentialKey;
  const url = call.auth?.authorizationUrl;
  const lines = [
    `${indent}asks:    ${describeScheme(scheme)}${typeof key === 'string' ? `, stored as "${key}"` : ''}`,
  ];
  if (typeof url === 'string') lines.push(`${indent}open to authorize: ${url}`);
  const hints = { ...o, keyArgument: undefined };
  const flags = flagsFor(scheme);
  flags.forEach((flag, i) => {
    const label = i === 0 ? 'answer: ' : 'or:     ';
    lines.push(
      `${indent}${label} ${cliLine(['auth', invocationId, call.callId, ...flag.split(' ')], hints)}`,
    );
  });
  if (flags.length === 0) {
    const basic =
      '{"exchangedAuthCredential":{"authType":"http","http":{"scheme":"basic","credentials":{"username":"…","password":"…"}}}}';
    lines.push(`${indent}respond: ${cliLine(['respond', invocationId, call.callId, basic], o)}`);
  }
  return lines;
}

/** The indented `approve:` / `reject:` / `respond:` / `answer:` lines that answer `call`. */
export function answerLines(
  invocationId: string,
  call: PendingCall,
  o: HintOptions,
  indent = '  ',
): string[] {
  const id = call.callId;
  if (call.kind === 'confirmation') {
    return [
      `${indent}approve: ${cliLine(['approve', invocationId, id], o)}`,
      `${indent}reject:  ${cliLine(['reject', invocationId, id], o)}`,
    ];
  }
  if (call.kind === 'in_doubt') {
    return [
      `${indent}respond: ${cliLine(['respond', invocationId, id, '{"action":"rerun"}'], o)}`,
      `${indent}         (or {"action":"skip","result":{…}} / {"action":"fail"})`,
    ];
  }
  if (call.kind === 'auth') return authLines(invocationId, call, o, indent);
  if (call.kind === 'budget') {
    const { limit, max } = call.args as { limit?: string; max?: number };
    const raise = JSON.stringify({ action: 'raise', budget: { [limit ?? 'tokens']: (max ?? 0) * 2 } });
    return [
      `${indent}asks:    ${call.hint ?? 'the next model call would cross a budget'}`,
      `${indent}raise:   ${cliLine(['respond', invocationId, id, raise], o)}`,
      `${indent}stop:    ${cliLine(['respond', invocationId, id, '{"action":"stop"}'], o)}`,
    ];
  }
  if (call.kind === 'elicitation') {
    const fields = Object.keys(
      ((call.elicitation?.requestedSchema as { properties?: object } | undefined)?.properties ??
        {}) as object,
    );
    const content = `{${fields.map((f) => `"${f}":…`).join(',')}}`;
    return [
      `${indent}asks:    ${call.elicitation?.message ?? ''}`,
      `${indent}respond: ${cliLine(['respond', invocationId, id, `{"action":"accept","content":${content}}`], o)}`,
      `${indent}         (or {"action":"decline"} / {"action":"cancel"})`,
    ];
  }
  return [`${indent}respond: ${cliLine(['respond', invocationId, id, '{"result":"…"}'], o)}`];
}
