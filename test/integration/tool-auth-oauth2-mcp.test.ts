/**
 * An MCP toolset behind the auth gate's OAuth2 (authorization code), through the HTTP API on PostgreSQL, against
 * a local OAuth2 provider and an MCP server that accepts only its tokens (the setting: test/support/scenarios/oauth2-flow.ts):
 * the user's token goes out as the call's Authorization, and a token the server refuses costs one new consent.
 * After the file, the scan for every secret of the flow (client secrets, codes, tokens) in rows, API answers and
 * log lines. The OAuth2 flows of function tools: tool-auth-oauth2.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { oauth2Flow, type Json } from '../support/scenarios/oauth2-flow.js';
import { expectNoSecrets, scannedRows } from '../support/assert/secret-scan.js';

const flow = oauth2Flow({ mcp: true });
const { provider, mcpLog, http, start, settled, pausedForAuth, consent } = flow;

describe('an MCP toolset with auth', () => {
  afterAll(async () => {
    // No test of its own (tool-auth-oauth2.test.ts has it for its flows): this file's consents and the MCP server's
    // refusal leave no secret behind either.
    const rows = await scannedRows(flow.engine);
    expect(rows.filter((r) => r.t === 'credentials').length).toBeGreaterThan(0);
    expectNoSecrets(flow.secrets(), { rows, answers: flow.answers, logLines: flow.logLines });
  });

  function echoCalls(): { tool: string; refused?: boolean }[] {
    if (!existsSync(mcpLog)) return [];
    return readFileSync(mcpLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { tool: string; refused?: boolean });
  }

  it("sends the user's token as the call's Authorization; a 401 costs one new consent, then the call runs", async () => {
    const first = await start('notes', 'frank');
    const pending = await pausedForAuth(first);
    expect(pending).toMatchObject({ name: 'echo', auth: { credentialKey: 'notes' } });
    await http('GET', await consent((pending.auth as Json).authorizationUrl as string));
    const done = await settled(first);
    expect(done.status).toBe('completed');
    expect(String(done.output)).toContain('hello notes');
    expect(echoCalls()).toEqual([expect.objectContaining({ tool: 'echo', end: 'done' })]);

    // The provider revokes the token: the server answers 401, the call asks once more, then runs (an unsafe MCP
    // tool: the refused call had no effect, so it is not in doubt).
    provider.revokeAll();
    const second = await start('notes', 'frank');
    const again = await pausedForAuth(second);
    await http('GET', await consent((again.auth as Json).authorizationUrl as string));
    const after = await settled(second);
    expect(after.status).toBe('completed');
    expect(String(after.output)).toContain('hello notes');
    expect(echoCalls().map((c) => [c.tool, c.refused ?? false])).toEqual([
      ['echo', false],
      ['echo', true],
      ['echo', false],
    ]);
  });
});
