/**
 * The auth gate's OAuth2 side, through the HTTP API on PostgreSQL, against a local OAuth2 provider
 * (examples/oauth2/fake-provider.ts: PKCE S256 checked, codes single use; the setting: test/support/scenarios/oauth2-flow.ts):
 * a call pauses with an authorization URL (state + PKCE challenge, no client secret); the provider's redirect to
 * `/v1/auth/callback` — or the same URL pasted as `authResponseUri` — completes it; a forged, unknown or reused
 * state is refused with nothing stored; a code the provider already redeemed is refused; the user's token is
 * reused, refreshed once when two calls find it expired together, and a token the service refuses costs one new
 * consent (no loop); the client-credentials flow never pauses. Then a scan for every secret of the flow (client
 * secrets, codes, access and refresh tokens). An MCP toolset with OAuth2: tool-auth-oauth2-mcp.test.ts.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { REQUEST_CREDENTIAL } from '../../src/agents/llm/journal.js';
import { oauth2Flow, type Json } from '../support/scenarios/oauth2-flow.js';
import { expectNoSecrets, scannedRows } from '../support/assert/secret-scan.js';

const flow = oauth2Flow();
const { provider, calendarClient, seen, answers, logLines } = flow;
const { http, start, settled, pausedForAuth, consent, credentialRows } = flow;

describe('OAuth2 authorization code with PKCE', () => {
  it('pauses with an authorization URL (state and S256 challenge, no secret); the callback completes it', async () => {
    const id = await start('calendar', 'alice');
    const pending = await pausedForAuth(id);
    const url = new URL((pending.auth as Json).authorizationUrl as string);
    expect(url.origin + url.pathname).toBe(`${provider.url}/authorize`);
    expect(url.searchParams.get('client_id')).toBe(calendarClient.id);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toBe(`${flow.base}/v1/auth/callback`);
    expect(url.searchParams.get('scope')).toBe('calendar.read');
    // ADK's request event: {functionCallId, authConfig} with the authorization URL and state, no secret.
    const events = (await http('GET', `/v1/invocations/${id}/events`)).body.events as Json[];
    const request = events
      .flatMap((e) => ((e.content as { parts?: Json[] } | undefined)?.parts ?? []) as Json[])
      .find((p) => (p.functionCall as Json | undefined)?.name === REQUEST_CREDENTIAL)?.functionCall as Json;
    expect(request).toMatchObject({
      id: pending.callId,
      args: {
        functionCallId: pending.originalCallId,
        authConfig: {
          credentialKey: 'calendar',
          rawAuthCredential: { authType: 'oauth2', oauth2: { clientId: calendarClient.id } },
          exchangedAuthCredential: {
            authType: 'oauth2',
            oauth2: { authUri: url.toString(), state: url.searchParams.get('state') },
          },
        },
      },
    });
    expect(JSON.stringify(request)).not.toContain(calendarClient.secret);

    const callback = await consent(url.toString());
    const done = await http('GET', callback);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Authorized');
    expect((await settled(id)).status).toBe('completed');
    expect(seen.filter((s) => s.run === id)).toEqual([
      { tool: 'list_events', run: id, token: expect.any(String), status: 200 },
    ]);

    // The same callback again (a reused state): 400, and nothing stored anew.
    const before = await credentialRows();
    const again = await http('GET', callback);
    expect(again.status).toBe(400);
    expect(again.text).toContain('already used');
    expect(await credentialRows()).toEqual(before);
  });

  it('refuses a forged or unknown state with 400 and stores nothing', async () => {
    const id = await start('calendar', 'mallory');
    const pending = await pausedForAuth(id);
    const state = new URL((pending.auth as Json).authorizationUrl as string).searchParams.get(
      'state',
    ) as string;
    const before = await credentialRows();
    const forged = state.slice(0, -4) + (state.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const bad of [forged, 'inv.call.mac', '']) {
      const answer = await http(
        'GET',
        `/v1/auth/callback?state=${encodeURIComponent(bad)}&code=planted-code-x`,
      );
      expect(answer.status).toBe(400);
    }
    // A state of another call pasted as this call's answer.
    const other = await start('calendar', 'mallory');
    const otherPending = await pausedForAuth(other);
    const stolen = await consent((otherPending.auth as Json).authorizationUrl as string);
    const misfiled = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [{ id: pending.callId, response: { authResponseUri: stolen } }],
    });
    expect(misfiled.status).toBe(400);
    expect(misfiled.body.error).toMatchObject({ details: { field: 'response.authResponseUri' } });
    expect(await credentialRows()).toEqual(before);
    expect((await settled(id)).status).toBe('paused');
    await http('POST', `/v1/invocations/${id}/cancel`);
    await http('POST', `/v1/invocations/${other}/cancel`);
  });

  it('takes the callback URL as a function response (authResponseUri); a code redeemed before is refused', async () => {
    const id = await start('calendar', 'bob');
    const pending = await pausedForAuth(id);
    const authorizationUrl = (pending.auth as Json).authorizationUrl as string;
    // Someone redeemed this code first (it leaked): the provider refuses it, the call stays paused.
    const leaked = await consent(authorizationUrl);
    const code = new URL(leaked).searchParams.get('code') as string;
    const thief = await fetch(`${provider.url}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: 'calendar-app' }),
    });
    expect(thief.status).toBe(400);
    const refused = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: pending.callId, name: REQUEST_CREDENTIAL, response: { authResponseUri: leaked } },
      ],
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('invalid_grant');
    expect((await settled(id)).status).toBe('paused');

    // A fresh consent, pasted as the answer.
    const callback = await consent(authorizationUrl);
    const ok = await http('POST', `/v1/invocations/${id}/responses`, {
      functionResponses: [
        { id: pending.callId, name: REQUEST_CREDENTIAL, response: { authResponseUri: callback } },
      ],
    });
    expect(ok.status).toBe(200);
    expect((await settled(id)).status).toBe('completed');
    expect(seen.filter((s) => s.run === id).map((s) => s.status)).toEqual([200]);
    const trail = (await http('GET', `/v1/invocations/${id}/requests`)).body.requests as Json[];
    expect(trail).toMatchObject([
      {
        kind: 'auth',
        status: 'answered',
        response: { credentialKey: 'calendar', authType: 'oauth2', stored: true },
      },
    ]);
  });

  it("reuses a user's token, and never another user's", async () => {
    const alice = await start('calendar', 'alice');
    expect((await settled(alice)).status).toBe('completed');
    const bob = await start('calendar', 'bob');
    expect((await settled(bob)).status).toBe('completed');
    const tokens = seen.filter((s) => s.run === alice || s.run === bob).map((s) => s.token);
    expect(new Set(tokens).size).toBe(2);
    const carol = await start('calendar', 'carol');
    await pausedForAuth(carol);
    await http('POST', `/v1/invocations/${carol}/cancel`);
  });

  it('one consent resumes both parallel calls; the expired token is refreshed once for the two', async () => {
    // Dave's first token expires within the leeway; refreshed ones last an hour. A refresh takes a while.
    provider.expiresIn = { authorization_code: 30 };
    provider.refreshDelayMs = 300;
    const refreshes = provider.stats.refreshes;
    const both = await start('digest', 'dave');
    const view = await settled(both);
    expect(view.status).toBe('paused');
    const pending = view.pending as Json[];
    expect(pending.map((p) => p.kind)).toEqual(['auth', 'auth']);
    const callback = await consent((pending[0]!.auth as Json).authorizationUrl as string);
    expect((await http('GET', callback)).status).toBe(200);
    expect((await settled(both)).status).toBe('completed');
    expect(provider.stats.refreshes - refreshes).toBe(1);
    const runs = seen.filter((s) => s.run === both);
    expect(runs.map((s) => s.status)).toEqual([200, 200]);
    expect(runs[0]!.token).toBe(runs[1]!.token);
    const trail = (await http('GET', `/v1/invocations/${both}/requests`)).body.requests as Json[];
    expect(trail.map((r) => r.status)).toEqual(['answered', 'answered']);
    provider.expiresIn = {};
    provider.refreshDelayMs = 0;
  });

  it("one consent resumes the user's other runs waiting for the same credential, not another user's", async () => {
    const first = await start('calendar', 'hank');
    const second = await start('calendar', 'hank');
    const other = await start('calendar', 'ivy');
    const pending = await pausedForAuth(first);
    await pausedForAuth(second);
    await pausedForAuth(other);
    expect((await http('GET', await consent((pending.auth as Json).authorizationUrl as string))).status).toBe(
      200,
    );
    expect((await settled(first)).status).toBe('completed');
    expect((await settled(second)).status).toBe('completed');
    const trail = (await http('GET', `/v1/invocations/${second}/requests`)).body.requests as Json[];
    expect(trail).toMatchObject([{ kind: 'auth', status: 'answered', response: { stored: true } }]);
    expect(seen.filter((s) => s.run === first || s.run === second).map((s) => s.status)).toEqual([200, 200]);
    expect((await settled(other)).status).toBe('paused');
    await http('POST', `/v1/invocations/${other}/cancel`);
  });

  it('an expired token whose refresh the provider refuses is deleted, and the user asked again', async () => {
    // Every token gina gets expires within the leeway: each use refreshes it.
    provider.expiresIn = { authorization_code: 30, refresh_token: 30 };
    onTestFinished(() => {
      provider.expiresIn = {};
    });
    const first = await start('calendar', 'gina');
    const pending = await pausedForAuth(first);
    // Answered as ADK's clients answer: the auth config back, the callback URL inside exchangedAuthCredential.
    const callback = await consent((pending.auth as Json).authorizationUrl as string);
    const config: Json = { ...(pending.auth as Json), authorizationUrl: undefined };
    const exchanged = (config.exchangedAuthCredential as { oauth2: Json }).oauth2;
    const adkAnswer = {
      ...config,
      exchangedAuthCredential: { authType: 'oauth2', oauth2: { ...exchanged, authResponseUri: callback } },
    };
    expect(
      (
        await http('POST', `/v1/invocations/${first}/responses`, {
          functionResponses: [{ id: pending.callId, name: REQUEST_CREDENTIAL, response: adkAnswer }],
        })
      ).status,
    ).toBe(200);
    expect((await settled(first)).status).toBe('completed');
    expect(await credentialRows()).toContainEqual(expect.objectContaining({ user_id: 'gina' }));

    provider.revokeRefreshTokens();
    const refused = provider.stats.refused;
    const second = await start('calendar', 'gina');
    await pausedForAuth(second);
    expect(provider.stats.refused - refused).toBe(1);
    expect(await credentialRows()).not.toContainEqual(expect.objectContaining({ user_id: 'gina' }));
    expect(seen.filter((s) => s.run === second)).toEqual([]);
    await http('POST', `/v1/invocations/${second}/cancel`);
  });

  it('a refused token is deleted and the user asked once more; a second refusal goes to the model', async () => {
    onTestFinished(() => {
      provider.refuseAll = false;
    });
    provider.revokeAll();
    const id = await start('calendar', 'alice');
    const pending = await pausedForAuth(id);
    expect(await credentialRows()).not.toContainEqual(expect.objectContaining({ user_id: 'alice' }));
    // The service refuses every token from now on: one more consent, then the error reaches the model.
    provider.refuseAll = true;
    await http('GET', await consent((pending.auth as Json).authorizationUrl as string));
    const done = await settled(id);
    expect(done.status).toBe('completed');
    expect(String(done.output)).toContain('the provider refused the token');
    expect(seen.filter((s) => s.run === id).map((s) => s.status)).toEqual([401, 401]);
    const trail = (await http('GET', `/v1/invocations/${id}/requests`)).body.requests as Json[];
    // One consent asked (after the first refusal); the second refusal did not ask again.
    expect(trail.filter((r) => r.kind === 'auth')).toHaveLength(1);
  });
});
describe('OAuth2 client credentials', () => {
  it('never pauses: the token is fetched once and reused', async () => {
    const before = provider.stats.clientCredentials;
    const first = await start('metrics', 'erin');
    expect((await settled(first)).status).toBe('completed');
    const second = await start('metrics', 'erin');
    expect((await settled(second)).status).toBe('completed');
    expect(provider.stats.clientCredentials - before).toBe(1);
    expect(seen.filter((s) => s.run === first || s.run === second).map((s) => s.status)).toEqual([200, 200]);
  });
});

describe('secrets', () => {
  it('leaves no client secret, code or token in any row, API answer, /metrics or log line', async () => {
    await http('GET', '/metrics');
    const secrets = flow.secrets();
    expect(provider.issued.filter((s) => s.includes('refresh')).length).toBeGreaterThan(1);
    expect(provider.issued.filter((s) => s.includes('code')).length).toBeGreaterThan(3);
    const rows = await scannedRows(flow.engine);
    expect(rows.filter((r) => r.t === 'credentials').length).toBeGreaterThan(2);
    expectNoSecrets(secrets, { rows, answers, logLines });
    expect(logLines.length).toBeGreaterThan(10);
  });
});
