/**
 * The setting of the A2A server tests (test/integration/a2a-server*.test.ts): an engine on PostgreSQL (a test
 * database of its own) serving the apps `echo`, `mail` (a confirmation before its tool sends), `broken` (its model
 * throws), `held` and `relay` (a leaf that waits for a gate), `team_echo` (in the kagent namespace `team`) and
 * `slow` (two gated leaves in sequence), behind three API servers: `base` (open, heartbeats every 5 ms),
 * `keyedBase` (API keys `KEY` for echo and `OTHER` for mail) and `otherBase` (another API process on the same
 * database, whose engine runs no steps). Made with beforeAll/afterAll of the calling file; its fields are set in
 * beforeAll.
 */
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { createApiServer, type ApiApp } from '../../../src/api/index.js';
import { createEngine, SequentialAgent, type Engine, type ScriptedTurn } from '../../../src/index.js';
import { gate, GatedLeaf, mailSender, scripted } from '../../fixtures/agents.js';
import { createTestDatabase } from '../services/services.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
export type Json = any;

export const KEY = 'a2a-server-key-0123456789';
export const OTHER = 'a2a-server-other-0123456789';

export function a2aServerSetting() {
  let other: ApiApp | undefined;
  let open: ApiApp | undefined;
  let keyed: ApiApp | undefined;
  let sends = 0;
  const s = {
    engine: undefined as unknown as Engine,
    apiEngine: undefined as unknown as Engine,
    database: '',
    base: '',
    keyedBase: '',
    otherBase: '',
    /** gates[0], gates[1]: the `slow` app's two leaves; gates[2]: `held`; gates[3]: `relay`. */
    gates: [gate(), gate(), gate(), gate()],
    /** How many mails the `mail` app's tool sent. */
    sends: (): number => sends,

    async rpc(
      path: string,
      body: unknown,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; json: Json; text: string }> {
      const response = await fetch(`${s.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let json: Json;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, json, text };
    },
  };
  const gates = s.gates;

  beforeAll(async () => {
    const mail = mailSender(() => sends++, { description: 'sends mails after a confirmation' });
    const echo = scripted('echoer', (turn: ScriptedTurn) => `echo #${turn.contents.length}`, {
      description: 'echoes',
    });
    s.database = await createTestDatabase();
    s.engine = await createEngine({
      apps: [
        { name: 'echo', agent: echo },
        { name: 'mail', agent: mail },
        {
          name: 'broken',
          agent: scripted('breaker', () => {
            throw new Error('the model is down');
          }),
        },
        { name: 'held', agent: new GatedLeaf('holder', gates[2]!.promise) },
        { name: 'relay', agent: new GatedLeaf('relayer', gates[3]!.promise) },
        { name: 'team_echo', agent: scripted('team_echoer', 'team echo'), namespace: 'team' },
        {
          name: 'slow',
          agent: new SequentialAgent({
            name: 'slow_pipeline',
            description: 'waits',
            subAgents: [
              new GatedLeaf('first', gates[0]!.promise),
              new GatedLeaf('second', gates[1]!.promise),
            ],
          }),
        },
      ],
      database: s.database,
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
    // Another API process on the same database: an engine that runs no steps, as `agentloom api`'s.
    s.apiEngine = await createEngine({
      apps: [{ name: 'relay', agent: new GatedLeaf('relayer', gates[3]!.promise) }],
      database: s.database,
      queue: 'local',
      worker: false,
      logger: pino({ level: 'silent' }),
    });
    other = await createApiServer({ engine: s.apiEngine, processMetrics: false });
    s.otherBase = await other.listen({ port: 0, host: '127.0.0.1' });
    // Heartbeats every 5 ms: every stream below carries comments between its events, which clients skip.
    open = await createApiServer({ engine: s.engine, processMetrics: false, heartbeatMs: 5 });
    s.base = await open.listen({ port: 0, host: '127.0.0.1' });
    keyed = await createApiServer({
      engine: s.engine,
      processMetrics: false,
      apiKeys: `echoes:${KEY}:echo others:${OTHER}:mail`,
    });
    s.keyedBase = await keyed.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    gates.forEach((g) => g.open());
    await open?.close();
    await keyed?.close();
    await other?.close();
    await s.apiEngine?.close();
    await s.engine?.close();
  });

  return s;
}
