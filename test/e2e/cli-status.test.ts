/**
 * `agentloom status ID` as an operator runs it: a real CLI process reading through the HTTP API (here an engine
 * and API server in the test process, on PostgreSQL) — status, the definition hash a run needs, the node tree and
 * the pending call with the lines that answer it, exiting with the run's code (3 paused; every status is covered
 * against `dev` and `api` + workers by cli-scenarios.ts); and plain one-line errors with exit 1 for an unknown
 * invocation and for an API that does not answer.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createEngine, SequentialAgent } from '../../src/index.js';
import { call, confirmedTool, scripted } from '../fixtures/agents.js';
import { freePort, runCli, show } from '../support/processes/cli.js';
import { serveEngine } from '../support/services/api-servers.js';
import { createTestDatabase } from '../support/services/services.js';

const url = await createTestDatabase();
const api = serveEngine(
  async () => {
    const send = confirmedTool('send', 'sends');
    const root = new SequentialAgent({
      name: 'pipeline',
      subAgents: [
        scripted('writer', 'draft'),
        scripted('sender', call('send', { to: 'bob' }), { tools: [send] }),
      ],
    });
    return createEngine({
      apps: [{ name: 'mail', agent: root }],
      database: url,
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
  },
  { processMetrics: false },
);

describe('agentloom status', () => {
  it('shows the definition hash a run needs, its node tree and its pending call', async () => {
    const { invocationId } = await api.engine.enqueue({ app: 'mail', userId: 'u', input: 'go' });
    const paused = await api.engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(paused.status).toBe('paused');
    const result = await runCli(['status', invocationId, '--url', api.base]);
    expect(result.stderr).toBe('');
    // The run's code: 3 paused (a script branches on it without parsing the text).
    expect(result.code, show(result)).toBe(3);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`invocation ${invocationId}  app mail  status paused`);
    expect(lines[1]).toContain(`definition ${api.engine.apps.get('mail')?.definitionHash}`);
    expect(lines.slice(3, 7)).toEqual([
      'nodes',
      '  pipeline  sequential  paused',
      '    writer  llm  completed  attempt 1',
      '    sender  llm  paused  attempt 1',
    ]);
    const callId = paused.pending[0]?.callId as string;
    const at = lines.indexOf(`pending confirmation ${callId}: send({"to":"bob"}) at pipeline/sender`);
    expect(at, result.stdout).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe(
      `  approve: npx agentloom approve ${invocationId} ${callId} --url ${api.base}`,
    );
    expect(lines[at + 2]).toBe(`  reject:  npx agentloom reject ${invocationId} ${callId} --url ${api.base}`);
  });

  it("says in --help that it exits with the run's code", async () => {
    const help = await runCli(['status', '--help']);
    expect(help.code, show(help)).toBe(0);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain(
      "exit with the run's code: 0 completed (or still queued or running), 1 failed or cancelled, 3 paused",
    );
  });

  it('names an unknown invocation, and an API that does not answer, in one plain line (exit 1)', async () => {
    const unknown = await runCli(['status', 'inv_missing'], { env: { AGENTLOOM_URL: api.base } });
    expect(unknown.code, show(unknown)).toBe(1);
    expect(unknown.stderr).toMatch(/^agentloom: NOT_FOUND: invocation inv_missing does not exist\n$/);
    const closed = `http://127.0.0.1:${await freePort()}`;
    const none = await runCli(['status', 'inv_x', '--url', closed]);
    expect(none.code, show(none)).toBe(1);
    expect(none.stderr).toBe(
      `agentloom: UNAVAILABLE: cannot reach the agentloom API at ${closed} (ECONNREFUSED): start one with \`agentloom dev\` (or \`agentloom api\`), or point --url / AGENTLOOM_URL at it\n`,
    );
  });
});
