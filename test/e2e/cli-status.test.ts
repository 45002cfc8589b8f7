/** `agentloom status ID` as an operator runs it against the database: status, needed definition, node tree. */
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createEngine, FunctionTool, SequentialAgent } from '../../src/index.js';
import { call, scripted } from '../support/agents.js';
import { createTestDatabase } from '../support/services.js';

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  return spawnSync(process.execPath, ['bin/agentloom.js', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: undefined, ...env },
    timeout: 60_000,
  });
}

describe('agentloom status', () => {
  it('shows the definition hash a run needs, its node tree and its pending call', async () => {
    const url = await createTestDatabase();
    const send = new FunctionTool({
      name: 'send',
      description: 'sends',
      requireConfirmation: true,
      execute: () => ({ sent: true }),
    });
    const root = new SequentialAgent({
      name: 'pipeline',
      subAgents: [
        scripted('writer', 'draft'),
        scripted('sender', call('send', { to: 'bob' }), { tools: [send] }),
      ],
    });
    const engine = await createEngine({
      apps: [{ name: 'mail', agent: root }],
      database: url,
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'mail', userId: 'u', input: 'go' });
      const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(paused.status).toBe('paused');
      const result = cli(['status', invocationId], { DATABASE_URL: url });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      const lines = result.stdout.split('\n');
      expect(lines[0]).toBe(`invocation ${invocationId}  app mail  status paused`);
      expect(lines[1]).toContain(`definition ${engine.apps.get('mail')?.definitionHash}`);
      expect(lines.slice(3, 7)).toEqual([
        'nodes',
        '  pipeline  sequential  paused',
        '    writer  llm  completed  attempt 1',
        '    sender  llm  paused  attempt 1',
      ]);
      expect(
        lines.some((l) => /^pending confirmation \S+: send\(\{"to":"bob"\}\) at pipeline\/sender$/.test(l)),
      ).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('says what to do without a database, and names an unknown invocation', async () => {
    const none = cli(['status', 'inv_x']);
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/CONFIG: status needs a database: set DATABASE_URL/);
    const unknown = cli(['status', 'inv_missing'], { DATABASE_URL: await createTestDatabase() });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/NOT_FOUND: invocation inv_missing does not exist/);
  });
});
