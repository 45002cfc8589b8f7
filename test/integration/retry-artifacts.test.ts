/** engine.retry resumes a failed invocation from its checkpoints; tools save artifacts that templates read. */
import { describe, expect, it } from 'vitest';
import { FunctionTool, SequentialAgent } from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

describe.each(backends)('retry and artifacts on $name', (backend) => {
  it('retries a failed invocation without re-running what completed', async () => {
    let fail = true;
    const first = scripted('first', 'first done');
    const flaky = scripted('flaky', () => {
      if (fail) throw new Error('model exploded');
      return 'flaky done';
    });
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: new SequentialAgent({ name: 's', subAgents: [first, flaky] }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const failed = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(failed.status).toBe('failed');
      expect(failed.error?.code).toBe('MODEL_ERROR');
      expect(failed.error?.message).toContain('model exploded');
      await expect(engine.retry('inv_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      fail = false;
      await engine.retry(invocationId);
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('flaky done');
      expect(first.model.calls).toBe(1);
      await expect(engine.retry(invocationId)).rejects.toMatchObject({ code: 'CONFLICT' });
    } finally {
      await engine.close();
    }
  });

  it('saves artifact versions from a tool and renders {artifact.name} in a later instruction', async () => {
    const save = new FunctionTool({
      name: 'save_notes',
      description: 'd',
      execute: async (_args, ctx) => {
        await ctx.saveArtifact('notes.md', { mime: 'text/markdown', data: 'v1 notes' });
        const version = await ctx.saveArtifact('notes.md', { mime: 'text/markdown', data: 'final notes' });
        const loaded = await ctx.loadArtifact('notes.md', 1);
        return { version, first: new TextDecoder().decode(loaded?.data) };
      },
    });
    const writer = scripted(
      'writer',
      (turn) => (turn.callIndex === 0 ? { functionCalls: [{ name: 'save_notes', args: {} }] } : 'saved'),
      {
        tools: [save],
      },
    );
    const reader = scripted('reader', (turn) => `read: ${turn.systemInstruction}`, {
      instruction: 'Notes: {artifact.notes.md}',
    });
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: new SequentialAgent({ name: 's', subAgents: [writer, reader] }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      const done = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(done.status).toBe('completed');
      expect(done.output).toBe('read: Notes: final notes');
      const response = writer.model.requests[1]?.contents
        .flatMap((c) => c.parts)
        .find((p) => p.functionResponse)?.functionResponse;
      expect(response?.response).toEqual({ version: 2, first: 'v1 notes' });
    } finally {
      await engine.close();
    }
  });
});

describe('streaming', () => {
  it('delivers partial events to live followers and never stores them', async () => {
    // The model answers only once the follower is listening (it has received the first stored event).
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const agent = scripted('talker', () => gate.then(() => 'streamed answer'), { stream: true });
    const engine = await engineOn(backends[0]!, { apps: [{ name: 'app', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'talk' });
      const live = [];
      for await (const e of engine.events(invocationId, { follow: true, partial: true })) {
        live.push(e);
        open();
      }
      const partial = live.filter((e) => e.partial);
      expect(partial.length).toBeGreaterThan(0);
      expect(partial[0]?.content?.parts[0]?.text).toBe('streamed answer');
      expect(partial[0]?.author).toBe('talker');
      const stored = [];
      for await (const e of engine.events(invocationId)) stored.push(e);
      expect(stored.some((e) => e.partial)).toBe(false);
      expect(stored.map((e) => e.author)).toEqual(['user', 'talker']);
    } finally {
      await engine.close();
    }
  });
});
