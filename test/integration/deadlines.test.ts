/**
 * Deadlines: a step past `maxStepMs`, a model call past `modelTimeoutMs` and
 * a tool call past its `timeoutMs` end with a clear error — even when the code ignores its signal — instead of
 * holding a lease forever.
 */
import { describe, expect, it } from 'vitest';
import { BaseAgent, FunctionTool, type Event, type InvocationContext } from '../../src/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

/** A custom agent whose step never ends and ignores its signal. */
class HangingAgent extends BaseAgent {
  // eslint-disable-next-line require-yield
  protected override async *runImpl(_ctx: InvocationContext): AsyncGenerator<Event> {
    await new Promise<void>(() => undefined);
  }
}

describe.each(backends)('deadlines on $name', (backend) => {
  it('fails a step that runs past maxStepMs with TIMEOUT and frees its node', async () => {
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: new HangingAgent({ name: 'stuck', maxStepMs: 300 }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 20_000 });
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('TIMEOUT');
      expect(result.error?.message).toMatch(/stuck.*maxStepMs \(300 ms\)/);
      const [node] = await engine.nodes(invocationId);
      expect(node?.status).toBe('failed');
    } finally {
      await engine.close();
    }
  });

  it('applies the engine default maxStepMs when the agent sets none', async () => {
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: new HangingAgent({ name: 'stuck' }) }],
      maxStepMs: 300,
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 20_000 });
      expect(result.error?.code).toBe('TIMEOUT');
    } finally {
      await engine.close();
    }
  });

  it('returns a tool call past its timeoutMs to the model as an error, with its signal aborted', async () => {
    let aborted = false;
    const slow = new FunctionTool({
      name: 'slow',
      description: 'never finishes',
      timeoutMs: 200,
      execute: (_args, ctx) =>
        new Promise(() => {
          ctx.signal.addEventListener('abort', () => (aborted = true));
        }),
    });
    const agent = scripted('caller', (turn) => (turn.callIndex === 0 ? call('slow') : 'gave up'), {
      tools: [slow],
    });
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 20_000 });
      expect(result.status).toBe('completed');
      expect(aborted).toBe(true);
      const response = agent.model.requests[1]?.contents
        .flatMap((c) => c.parts)
        .find((p) => p.functionResponse)?.functionResponse?.response;
      expect(String(response?.error)).toMatch(/tool "slow" did not finish within timeoutMs \(200 ms\)/);
    } finally {
      await engine.close();
    }
  });

  it('fails a model call past modelTimeoutMs with TIMEOUT', async () => {
    const agent = scripted('thinker', () => new Promise<string>(() => undefined), { modelTimeoutMs: 200 });
    const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const result = await engine.wait(invocationId, { timeoutMs: 20_000 });
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'TIMEOUT' });
      expect(result.error?.message).toMatch(/model call of thinker did not answer within modelTimeoutMs/);
    } finally {
      await engine.close();
    }
  });

  it('rejects bad deadline options at construction, naming the field', () => {
    expect(() => new HangingAgent({ name: 'x', maxStepMs: -1 })).toThrow(/maxStepMs must be a positive/);
    expect(() => new FunctionTool({ name: 't', description: 'd', timeoutMs: 0, execute: () => 1 })).toThrow(
      /timeoutMs must be a positive/,
    );
    expect(() => scripted('y', 'z', { modelTimeoutMs: Number.NaN })).toThrow(
      /modelTimeoutMs must be a positive/,
    );
  });
});
