import { describe, expect, it } from 'vitest';
import type { Content } from '../../src/core/content.js';
import { AgentloomError } from '../../src/core/errors.js';
import { ScriptedModel, type ModelRequest, type ScriptedTurn } from '../../src/models/index.js';

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    systemInstruction: 'Be brief.',
    contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    tools: [
      { name: 'search', description: 'Search the web' },
      { name: 'exit_loop', description: 'Exit the loop' },
    ],
    agentName: 'writer',
    callIndex: 0,
    state: { topic: 'owls' },
    ...overrides,
  };
}

describe('ScriptedModel', () => {
  it('turns a string reply into final model text', async () => {
    const model = new ScriptedModel({ respond: () => 'Hello' });
    const res = await model.generate(request());
    expect(res.content).toEqual({ role: 'model', parts: [{ text: 'Hello' }] });
    expect(res.finishReason).toBe('STOP');
    expect(model.name).toBe('scripted');
  });

  it('reports the usage it is given, fixed or per turn, and none by default', async () => {
    const fixed = new ScriptedModel({ respond: () => 'hi', usage: { promptTokens: 100, outputTokens: 50 } });
    expect((await fixed.generate(request())).usage).toEqual({ promptTokens: 100, outputTokens: 50 });
    const perTurn = new ScriptedModel({
      respond: () => 'hi',
      usage: (turn) => ({ promptTokens: 10 * (turn.callIndex + 1), outputTokens: 1 }),
    });
    expect((await perTurn.generate(request({ callIndex: 2 }))).usage).toEqual({
      promptTokens: 30,
      outputTokens: 1,
    });
    expect((await new ScriptedModel({ respond: () => 'hi' }).generate(request())).usage).toBeUndefined();
  });

  it('turns an object reply into text then function calls, with fresh ids only where missing', async () => {
    const model = new ScriptedModel({
      respond: () => ({
        text: 'Looking it up.',
        functionCalls: [
          { name: 'search', args: { q: 'owls' } },
          { name: 'search', id: 'fixed-id' },
          { name: 'exit_loop' },
        ],
      }),
    });
    const { content } = await model.generate(request());
    expect(content.role).toBe('model');
    expect(content.parts[0]).toEqual({ text: 'Looking it up.' });
    const calls = content.parts.slice(1).map((p) => p.functionCall);
    expect(calls[0]).toMatchObject({ name: 'search', args: { q: 'owls' } });
    expect(calls[0]?.id).toMatch(/^call_/);
    expect(calls[1]).toEqual({ id: 'fixed-id', name: 'search', args: {} });
    expect(calls[2]?.id).toMatch(/^call_/);
    expect(calls[2]?.id).not.toBe(calls[0]?.id);
  });

  it('uses a Content reply as is, with role model and ids filled in', async () => {
    const reply: Content = {
      role: 'user',
      parts: [{ text: 'thinking', thought: true }, { functionCall: { name: 'search', args: { q: 'x' } } }],
    };
    const model = new ScriptedModel({ respond: () => reply });
    const { content } = await model.generate(request());
    expect(content.role).toBe('model');
    expect(content.parts[0]).toEqual({ text: 'thinking', thought: true });
    expect(content.parts[1]?.functionCall).toMatchObject({ name: 'search', args: { q: 'x' } });
    expect(content.parts[1]?.functionCall?.id).toMatch(/^call_/);
    expect(reply.parts[1]?.functionCall?.id).toBeUndefined();
  });

  it('shows respond the turn: agent, call index, instruction, contents, tool names and state', async () => {
    const turns: ScriptedTurn[] = [];
    const model = new ScriptedModel({
      respond: async (turn) => {
        turns.push(turn);
        return `call ${turn.callIndex}`;
      },
    });
    const res = await model.generate(request({ callIndex: 2 }));
    expect(res.content.parts[0]?.text).toBe('call 2');
    expect(turns).toEqual([
      {
        agentName: 'writer',
        callIndex: 2,
        systemInstruction: 'Be brief.',
        contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
        toolNames: ['search', 'exit_loop'],
        state: { topic: 'owls' },
      },
    ]);
  });

  it('records copies of every request and counts calls per agent', async () => {
    const model = new ScriptedModel({ respond: () => 'ok' });
    const first = request();
    await model.generate(first);
    await model.generate(request({ agentName: 'critic', callIndex: 0 }));
    await model.generate(request({ callIndex: 1 }));
    first.contents.push({ role: 'user', parts: [{ text: 'mutated later' }] });
    first.state.topic = 'cats';

    expect(model.calls).toBe(3);
    expect(model.callsBy('writer')).toBe(2);
    expect(model.callsBy('critic')).toBe(1);
    expect(model.callsBy('nobody')).toBe(0);
    expect(model.requests.map((r) => [r.agentName, r.callIndex])).toEqual([
      ['writer', 0],
      ['critic', 0],
      ['writer', 1],
    ]);
    expect(model.requests[0]?.contents).toHaveLength(1);
    expect(model.requests[0]?.state).toEqual({ topic: 'owls' });
  });

  it('rejects with the error respond throws, and still records the call', async () => {
    const boom = new Error('script ran out');
    const model = new ScriptedModel({
      respond: () => {
        throw boom;
      },
    });
    await expect(model.generate(request())).rejects.toBe(boom);
    expect(model.calls).toBe(1);
  });

  it('emits the text as one partial when onPartial is given', async () => {
    const partials: Content[] = [];
    const model = new ScriptedModel({
      respond: () => ({ text: 'streamed', functionCalls: [{ name: 'search' }] }),
    });
    await model.generate(request(), { onPartial: (p) => partials.push(p) });
    expect(partials).toEqual([{ role: 'model', parts: [{ text: 'streamed' }] }]);
  });

  it('rejects with CANCELLED when the signal is already aborted, without calling respond', async () => {
    let called = false;
    const model = new ScriptedModel({
      name: 'script-a',
      respond: () => {
        called = true;
        return 'no';
      },
    });
    const controller = new AbortController();
    controller.abort();
    const err: unknown = await model
      .generate(request({ signal: controller.signal }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentloomError);
    expect((err as AgentloomError).code).toBe('CANCELLED');
    expect((err as AgentloomError).message).toContain('script-a');
    expect(called).toBe(false);
    expect(model.calls).toBe(0);
  });

  it('keeps only the latest keepRequests requests, while calls and callsBy count every call', async () => {
    const model = new ScriptedModel({ respond: () => 'ok', keepRequests: 3 });
    for (let i = 0; i < 10; i++) {
      await model.generate(request({ agentName: i % 2 === 0 ? 'even' : 'odd', callIndex: i }));
    }
    expect(model.requests.map((r) => r.callIndex)).toEqual([7, 8, 9]);
    expect(model.calls).toBe(10);
    expect(model.callsBy('even')).toBe(5);
    expect(model.callsBy('odd')).toBe(5);
    expect(() => new ScriptedModel({ respond: () => 'ok', keepRequests: -1 })).toThrow(/keepRequests/);
  });

  it('keeps no signal in its requests (a kept request must not hold its step alive), yet honours it', async () => {
    const model = new ScriptedModel({ respond: () => 'ok' });
    const controller = new AbortController();
    await model.generate(request({ signal: controller.signal }));
    expect(model.requests[0]).not.toHaveProperty('signal');
    controller.abort();
    await expect(model.generate(request({ signal: controller.signal }))).rejects.toThrow(/cancelled/);
  });
});
