/** History as a model sees it (SEMANTICS §3): branch isolation, other agents as context, framework calls removed. */
import { describe, expect, it } from 'vitest';
import { buildHistory, visibleToBranch } from '../../src/agents/history.js';
import type { Content, Event } from '../../src/core/index.js';

let seq = 0;
function ev(author: string, content: Content | undefined, extra: Partial<Event> = {}): Event {
  seq++;
  return {
    id: `e${seq}`,
    invocationId: 'i',
    author,
    nodePath: '',
    seq,
    timestamp: seq,
    content,
    actions: { stateDelta: {}, artifactDelta: {} },
    ...extra,
  };
}
const text = (role: 'user' | 'model', t: string): Content => ({ role, parts: [{ text: t }] });

describe('visibleToBranch', () => {
  it('shows ancestors and the own branch, never siblings or descendants', () => {
    expect(visibleToBranch(undefined, 'research.0')).toBe(true);
    expect(visibleToBranch('research.0', 'research.0')).toBe(true);
    expect(visibleToBranch('outer.1', 'outer.1.inner.0')).toBe(true);
    expect(visibleToBranch('research.1', 'research.0')).toBe(false);
    expect(visibleToBranch('research.0.x@c1', 'research.0')).toBe(false);
    expect(visibleToBranch('research.10', 'research.1')).toBe(false);
    expect(visibleToBranch('research.0', undefined)).toBe(true);
  });
});

describe('buildHistory', () => {
  const events = [
    ev('user', text('user', 'write about tea')),
    ev('web', text('model', 'web notes'), { branch: 'research.0' }),
    ev('docs', text('model', 'doc notes'), { branch: 'research.1' }),
    ev('research', undefined, { actions: { stateDelta: {}, artifactDelta: {}, endOfAgent: true } }),
    ev(
      'web',
      { role: 'model', parts: [{ functionCall: { id: 'c1', name: 'search', args: { q: 'tea' } } }] },
      { branch: 'research.0' },
    ),
    ev(
      'web',
      { role: 'user', parts: [{ functionResponse: { id: 'c1', name: 'search', response: { hits: 2 } } }] },
      { branch: 'research.0' },
    ),
  ];

  it("never shows a branch its siblings' events, and shows its own as they are", () => {
    const history = buildHistory(events, {
      agentName: 'web',
      branch: 'research.0',
      includeContents: 'default',
    });
    const all = JSON.stringify(history);
    expect(all).not.toContain('doc notes');
    expect(history[0]).toEqual(text('user', 'write about tea'));
    expect(history[1]).toEqual(text('model', 'web notes'));
    expect(history.at(-1)?.parts[0]?.functionResponse?.response).toEqual({ hits: 2 });
  });

  it("presents other agents' events as user context", () => {
    const history = buildHistory(events, { agentName: 'writer', includeContents: 'default' });
    const context = history
      .filter((c) => c.parts[0]?.text === 'For context:')
      .flatMap((c) => c.parts.slice(1).map((p) => p.text));
    expect(context).toEqual([
      '[web] said: web notes',
      '[docs] said: doc notes',
      '[web] called tool `search` with parameters: {"q":"tea"}',
      '[web] `search` tool returned result: {"hits":2}',
    ]);
    expect(history.every((c) => c.role === 'user')).toBe(true);
  });

  it('drops framework calls and keeps only the last response of a call id, merging parallel responses', () => {
    const flow = [
      ev('user', text('user', 'go')),
      ev('a', {
        role: 'model',
        parts: [
          { functionCall: { id: 'x', name: 'pay', args: {} } },
          { functionCall: { id: 'y', name: 'log', args: {} } },
        ],
      }),
      ev('a', {
        role: 'user',
        parts: [{ functionResponse: { id: 'x', name: 'pay', response: { error: 'needs confirmation' } } }],
      }),
      ev('a', {
        role: 'model',
        parts: [{ functionCall: { id: 'r1', name: 'adk_request_confirmation', args: {} } }],
      }),
      ev('user', {
        role: 'user',
        parts: [
          { functionResponse: { id: 'r1', name: 'adk_request_confirmation', response: { confirmed: true } } },
        ],
      }),
      ev('a', { role: 'user', parts: [{ functionResponse: { id: 'y', name: 'log', response: { ok: 1 } } }] }),
      ev('a', {
        role: 'user',
        parts: [{ functionResponse: { id: 'x', name: 'pay', response: { paid: true } } }],
      }),
    ];
    const history = buildHistory(flow, { agentName: 'a', includeContents: 'default' });
    expect(JSON.stringify(history)).not.toContain('adk_request_confirmation');
    expect(JSON.stringify(history)).not.toContain('needs confirmation');
    expect(history).toHaveLength(3);
    expect(history[2]?.parts.map((p) => p.functionResponse?.name)).toEqual(['log', 'pay']);
  });

  it("with includeContents 'none' keeps only the current turn", () => {
    const flow = [
      ev('user', text('user', 'old question')),
      ev('a', text('model', 'old answer')),
      ev('user', text('user', 'new question')),
    ];
    const history = buildHistory(flow, { agentName: 'a', includeContents: 'none' });
    expect(history).toEqual([text('user', 'new question')]);
  });
});
