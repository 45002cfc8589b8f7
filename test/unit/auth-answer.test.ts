/**
 * `agentloom auth` and `status` for an `auth` pause, without a server: which answer each flag sends for each scheme
 * (ADK's shapes), the usage errors (exactly one flag, a flag that fits the scheme) that never echo the value, and
 * the lines `status` prints: what is asked, where to authorize, the command that answers.
 */
import { describe, expect, it } from 'vitest';
import { authAnswer, type AuthFlags } from '../../src/cli/client/auth-answer.js';
import { formatStatus } from '../../src/cli/client/status.js';
import type { PendingCall } from '../../src/engine/runs/views.js';

const SECRET = 'planted-secret-0123';

function authCall(auth: Record<string, unknown>): PendingCall {
  return {
    callId: 'auth-1',
    kind: 'auth',
    name: 'get_weather',
    args: {},
    nodePath: 'forecaster',
    originalCallId: 'call-1',
    auth,
  };
}

const API_KEY = authCall({
  authScheme: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
  credentialKey: 'weather',
});
const BEARER = authCall({ authScheme: { type: 'http', scheme: 'bearer' }, credentialKey: 'http_abc' });
const BASIC = authCall({ authScheme: { type: 'http', scheme: 'basic' }, credentialKey: 'http_def' });
const AUTHORIZATION_URL = 'https://provider.example/authorize?client_id=c&state=st4te';
const OAUTH = authCall({
  authScheme: {
    type: 'oauth2',
    flows: {
      authorizationCode: {
        authorizationUrl: 'https://provider.example/authorize',
        tokenUrl: 'https://provider.example/token',
        scopes: {},
      },
    },
  },
  credentialKey: 'calendar',
  authorizationUrl: AUTHORIZATION_URL,
});

/** The usage error `authAnswer` throws (its message must not carry the value given). */
function usageOf(call: PendingCall, flags: AuthFlags): string {
  try {
    authAnswer(call, flags);
  } catch (err) {
    expect((err as { code?: string }).code).toBe('USAGE');
    expect((err as Error).message).not.toContain(SECRET);
    return (err as Error).message;
  }
  throw new Error('no usage error');
}

describe('authAnswer', () => {
  it("sends ADK's shape for the flag and the scheme asked for", () => {
    expect(authAnswer(API_KEY, { apiKey: SECRET })).toEqual({
      response: { exchangedAuthCredential: { authType: 'apiKey', apiKey: SECRET } },
      what: 'an API key',
    });
    expect(authAnswer(BEARER, { token: SECRET }).response).toEqual({
      exchangedAuthCredential: {
        authType: 'http',
        http: { scheme: 'bearer', credentials: { token: SECRET } },
      },
    });
    expect(authAnswer(OAUTH, { token: SECRET })).toEqual({
      response: { exchangedAuthCredential: { authType: 'oauth2', oauth2: { accessToken: SECRET } } },
      what: 'an OAuth2 access token',
    });
    const callback = `https://app.example/cb?state=st4te&code=${SECRET}`;
    expect(authAnswer(OAUTH, { callbackUrl: callback }).response).toEqual({ authResponseUri: callback });
  });

  it('wants exactly one flag, not empty, naming the three', () => {
    expect(usageOf(API_KEY, {})).toBe(
      'give exactly one of --token TOKEN, --api-key KEY or --callback-url CALLBACK_URL',
    );
    expect(usageOf(API_KEY, { apiKey: SECRET, token: SECRET })).toBe(
      'give exactly one of --token TOKEN, --api-key KEY or --callback-url CALLBACK_URL (got --token and --api-key)',
    );
    expect(usageOf(API_KEY, { apiKey: ' ' })).toBe('--api-key must not be empty');
  });

  it('refuses a flag that does not fit the scheme, naming the one that does', () => {
    expect(usageOf(API_KEY, { token: SECRET })).toBe(
      'call auth-1 asks for an API key (header X-Api-Key), not --token: answer it with --api-key KEY',
    );
    expect(usageOf(BEARER, { callbackUrl: `https://x.example/?code=${SECRET}` })).toBe(
      'call auth-1 asks for an HTTP bearer token, not --callback-url: answer it with --token TOKEN',
    );
    expect(usageOf(OAUTH, { apiKey: SECRET })).toContain(
      'answer it with --callback-url CALLBACK_URL or --token TOKEN',
    );
    expect(usageOf(BASIC, { token: SECRET })).toContain('answer it with agentloom respond');
    expect(usageOf(OAUTH, { callbackUrl: `not a url ${SECRET}` })).toMatch(
      /^--callback-url must be the full/,
    );
  });
});

describe('status of an auth pause', () => {
  const view = {
    id: 'inv-1',
    app: 'weather',
    status: 'paused',
    definitionHash: 'h',
    llmCalls: 1,
    maxLlmCalls: 100,
    error: null,
    output: null,
  } as const;
  const hints = { url: 'http://127.0.0.1:8080', keyArgument: '--api-key "$AGENTLOOM_API_KEY"' };

  it('says what is asked and the command that answers (no key argument: --api-key is the tool key there)', () => {
    const lines = formatStatus({ ...view, pending: [API_KEY] }, [], hints);
    expect(lines.slice(-3)).toEqual([
      'pending auth auth-1: get_weather({}) at forecaster',
      '  asks:    an API key (header X-Api-Key), stored as "weather"',
      '  answer:  npx agentloom auth inv-1 auth-1 --api-key KEY',
    ]);
    expect(formatStatus({ ...view, pending: [BEARER] }, [], hints).slice(-2)).toEqual([
      '  asks:    an HTTP bearer token, stored as "http_abc"',
      '  answer:  npx agentloom auth inv-1 auth-1 --token TOKEN',
    ]);
  });

  it('shows where to authorize an OAuth2 call, then both ways to answer', () => {
    const lines = formatStatus({ ...view, pending: [OAUTH] }, [], { url: 'http://10.0.0.5:8080' });
    expect(lines.slice(-4)).toEqual([
      '  asks:    an OAuth2 authorization (authorization code), stored as "calendar"',
      `  open to authorize: ${AUTHORIZATION_URL}`,
      '  answer:  npx agentloom auth inv-1 auth-1 --callback-url CALLBACK_URL --url http://10.0.0.5:8080',
      '  or:      npx agentloom auth inv-1 auth-1 --token TOKEN --url http://10.0.0.5:8080',
    ]);
  });

  it('answers HTTP basic with respond and the JSON shape', () => {
    const lines = formatStatus({ ...view, pending: [BASIC] }, [], hints);
    expect(lines.at(-1)).toMatch(
      /^ {2}respond: npx agentloom respond inv-1 auth-1 '\{"exchangedAuthCredential":\{"authType":"http","http":\{"scheme":"basic"/,
    );
  });
});
