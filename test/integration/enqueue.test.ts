/** Enqueueing: sessions, idempotency keys, and clear errors for bad input (nothing is stored then). */
import { describe, expect, it } from 'vitest';
import { scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

describe.each(backends)('enqueue on $name', (backend) => {
  it('reuses a session, deduplicates by idempotency key, and rejects bad input clearly', async () => {
    const agent = scripted('echo', (turn) => `seen ${turn.contents.length} messages`);
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const first = await engine.enqueue({
        app: 'app',
        userId: 'ann',
        input: 'one',
        idempotencyKey: 'req-1',
      });
      const again = await engine.enqueue({
        app: 'app',
        userId: 'ann',
        input: 'one',
        idempotencyKey: 'req-1',
      });
      expect(again.invocationId).toBe(first.invocationId);
      await engine.wait(first.invocationId, { timeoutMs: 30_000 });
      const second = await engine.enqueue({
        app: 'app',
        userId: 'ann',
        sessionId: first.sessionId,
        input: 'two',
      });
      const done = await engine.wait(second.invocationId, { timeoutMs: 30_000 });
      // The second invocation sees the whole session: user, answer, user.
      expect(done.output).toBe('seen 3 messages');
      expect(agent.model.calls).toBe(2);

      const bad: [Record<string, unknown>, string, RegExp][] = [
        [
          { app: 'nope', userId: 'ann', input: 'x' },
          'NOT_FOUND',
          /app "nope" is not registered; known apps: app/,
        ],
        [{ app: 'app', userId: '', input: 'x' }, 'VALIDATION', /userId must be a non-empty string/],
        [{ app: 'app', userId: 'ann', input: 42 }, 'VALIDATION', /input must be a string or a Content/],
        [
          { app: 'app', userId: 'ann', input: 'x', stateDelta: [1] },
          'VALIDATION',
          /stateDelta must be an object/,
        ],
        [
          { app: 'app', userId: 'ann', input: 'x', maxLlmCalls: 0 },
          'VALIDATION',
          /maxLlmCalls must be an integer/,
        ],
        [
          { app: 'app', userId: 'bob', sessionId: first.sessionId, input: 'x' },
          'CONFLICT',
          /belongs to another app or user/,
        ],
      ];
      for (const [input, code, message] of bad) {
        const err = await engine.enqueue(input as never).catch((e: unknown) => e);
        expect(err, JSON.stringify(input)).toMatchObject({ code });
        expect((err as Error).message).toMatch(message);
      }
      expect((await engine.getSession(first.sessionId)).events).toHaveLength(4);
      await expect(engine.get('inv_nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      await engine.close();
    }
  });
});
