/**
 * What `agentloom auth ID CALL (--token T | --api-key K | --callback-url URL)` sends: the function response to an
 * `adk_request_credential` call in ADK's shape, chosen by the flag given and the scheme the pending call asks for
 * (`pending[].auth.authScheme`). Also how a scheme is described to a person and which flags answer it. The values
 * given are never part of a message: only the flag names are.
 */
import type { PendingCall } from '../../engine/runs/views.js';
import { UsageError } from '../terminal/cli-errors.js';

/** The flags of `agentloom auth`, as commander gives them: exactly one is set. */
export interface AuthFlags {
  token?: string;
  apiKey?: string;
  callbackUrl?: string;
}

/** A flag of `agentloom auth` with the placeholder of its value. */
export type AuthFlag = '--api-key KEY' | '--token TOKEN' | '--callback-url CALLBACK_URL';

/** The parts of a security scheme the CLI reads (OpenAPI's, as the pending call shows it). */
interface AskedScheme {
  type?: unknown;
  scheme?: unknown;
  in?: unknown;
  name?: unknown;
  flows?: { authorizationCode?: unknown; clientCredentials?: unknown };
}

/** The scheme a pending `auth` call asks for; undefined when it shows none. */
export function schemeOf(call: Pick<PendingCall, 'auth'>): AskedScheme | undefined {
  const scheme = call.auth?.authScheme;
  return typeof scheme === 'object' && scheme !== null ? (scheme as AskedScheme) : undefined;
}

/** `an API key (header X-Api-Key)`, `an HTTP bearer token`, `an OAuth2 authorization (authorization code)`, … */
export function describeScheme(scheme: AskedScheme | undefined): string {
  if (scheme?.type === 'apiKey') {
    return typeof scheme.in === 'string' && typeof scheme.name === 'string'
      ? `an API key (${scheme.in} ${scheme.name})`
      : 'an API key';
  }
  if (scheme?.type === 'http') {
    return scheme.scheme === 'basic'
      ? 'HTTP basic credentials (a username and a password)'
      : 'an HTTP bearer token';
  }
  if (scheme?.type === 'oauth2') {
    const flow = scheme.flows?.authorizationCode
      ? ' (authorization code)'
      : scheme.flows?.clientCredentials
        ? ' (client credentials)'
        : '';
    return `an OAuth2 authorization${flow}`;
  }
  return scheme === undefined ? 'a credential' : `a credential (${JSON.stringify(scheme)})`;
}

/** The flags that answer a scheme, most usual first; none for HTTP basic (answered with `respond`). */
export function flagsFor(scheme: AskedScheme | undefined): AuthFlag[] {
  if (scheme?.type === 'apiKey') return ['--api-key KEY'];
  if (scheme?.type === 'http') return scheme.scheme === 'basic' ? [] : ['--token TOKEN'];
  if (scheme?.type === 'oauth2') return ['--callback-url CALLBACK_URL', '--token TOKEN'];
  return ['--api-key KEY', '--token TOKEN', '--callback-url CALLBACK_URL'];
}

/** The one flag given, with its value; bad usage unless exactly one is, and not empty. */
function givenFlag(flags: AuthFlags): { flag: '--token' | '--api-key' | '--callback-url'; value: string } {
  const given = (
    [
      ['--token', flags.token],
      ['--api-key', flags.apiKey],
      ['--callback-url', flags.callbackUrl],
    ] as const
  ).filter(([, value]) => value !== undefined);
  const [first] = given;
  if (given.length !== 1 || first === undefined) {
    const got = given.length > 1 ? ` (got ${given.map(([flag]) => flag).join(' and ')})` : '';
    throw new UsageError(
      `give exactly one of --token TOKEN, --api-key KEY or --callback-url CALLBACK_URL${got}`,
    );
  }
  const [flag, value] = first;
  if ((value as string).trim() === '') throw new UsageError(`${flag} must not be empty`);
  return { flag, value: value as string };
}

/** The response to send, and what it holds (for the line printed: never the value). */
export interface AuthAnswer {
  response: Record<string, unknown>;
  what: string;
}

/**
 * The function response that answers `call` with the flag given: `--api-key` → an API key; `--token` → an HTTP
 * bearer token, or an OAuth2 access token when the call asks for OAuth2; `--callback-url` → the OAuth2 redirect
 * (`authResponseUri`). A flag that does not fit the scheme asked for is bad usage, naming the one that does.
 */
export function authAnswer(call: Pick<PendingCall, 'auth' | 'callId'>, flags: AuthFlags): AuthAnswer {
  const { flag, value } = givenFlag(flags);
  const scheme = schemeOf(call);
  const fits = flagsFor(scheme).map((f) => f.split(' ')[0]);
  if (!fits.includes(flag)) {
    const how =
      fits.length > 0
        ? `answer it with ${flagsFor(scheme).join(' or ')}`
        : `answer it with agentloom respond and {"exchangedAuthCredential": {"authType": "http", "http": {"scheme": "basic", "credentials": {"username": "…", "password": "…"}}}}`;
    throw new UsageError(`call ${call.callId} asks for ${describeScheme(scheme)}, not ${flag}: ${how}`);
  }
  if (flag === '--api-key') {
    return {
      response: { exchangedAuthCredential: { authType: 'apiKey', apiKey: value } },
      what: 'an API key',
    };
  }
  if (flag === '--callback-url') {
    if (!/^https?:\/\//i.test(value) || !URL.canParse(value)) {
      throw new UsageError(
        '--callback-url must be the full http(s) URL the provider redirected the browser to (with its state and code)',
      );
    }
    return { response: { authResponseUri: value }, what: 'the OAuth2 callback URL' };
  }
  if (scheme?.type === 'oauth2') {
    return {
      response: { exchangedAuthCredential: { authType: 'oauth2', oauth2: { accessToken: value } } },
      what: 'an OAuth2 access token',
    };
  }
  return {
    response: {
      exchangedAuthCredential: {
        authType: 'http',
        http: { scheme: 'bearer', credentials: { token: value } },
      },
    },
    what: 'a bearer token',
  };
}
