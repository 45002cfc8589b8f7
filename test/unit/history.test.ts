/** History as a model sees it (SEMANTICS §3): branch isolation, other agents as context, framework calls removed. */
import { describe, expect, it } from 'vitest';
import { parallelLane } from '../../src/agents/branch.js';
import { buildHistory, visibleToBranch } from '../../src/agents/llm/history.js';
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

describe('visibleToBranch after fan-outs the reader has passed', () => {
  it('shows a stage the lanes of an earlier stage on its line, never a sibling lane of its own fan-out', () => {
    // A sequence of two parallel stages.
    expect(visibleToBranch('stage1.0', 'stage2.1')).toBe(true);
    expect(visibleToBranch('stage1.1.deep.0', 'stage2.1')).toBe(true);
    expect(visibleToBranch('stage2.0', 'stage2.1')).toBe(false);
    // A fan-out started from the reader's own branch has ended before the reader reads again.
    expect(visibleToBranch('maps.0.fan_a.1', 'maps.0')).toBe(true);
    // Stages inside a parallel branch: its own earlier stages, never the other branch's.
    expect(visibleToBranch('lines.0.l1.0', 'lines.0.l2.0')).toBe(true);
    expect(visibleToBranch('lines.1.r1.0', 'lines.0.l2.0')).toBe(false);
    expect(visibleToBranch('lines.1', 'lines.0.l2.0')).toBe(false);
  });

  it('keeps AgentTool calls private to their line, and tells runs of a fan-out in a loop apart', () => {
    expect(visibleToBranch('helper@c1', 'stage2.0')).toBe(false);
    expect(visibleToBranch('x.0.helper@c1', 'x.0.helper@c2')).toBe(false);
    expect(visibleToBranch('x.0', 'x.0.helper@c2')).toBe(true);
    expect(visibleToBranch('x.0.stage.1', 'x.0.helper@c2')).toBe(true);
    expect(parallelLane('stage', 'root/refine/round#1/stage', 0)).toBe('stage#1.0');
    expect(parallelLane('stage', 'outer/inner#0/stage#2', 1)).toBe('stage#0#2.1');
    expect(parallelLane('research', 'root/research', 1)).toBe('research.1');
    // Iteration 1 sees iteration 0's lanes (that run has ended), never a sibling lane of its own run.
    expect(visibleToBranch('stage#0.1', 'stage#1.0')).toBe(true);
    expect(visibleToBranch('stage#1.1', 'stage#1.0')).toBe(false);
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

  it('drops framework calls and keeps only the last response of a call id, merging parallel responses in call order', () => {
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
    // Stored log, then pay; the model called pay, then log: the answers follow the calls' order.
    expect(history[2]?.parts.map((p) => p.functionResponse?.name)).toEqual(['pay', 'log']);
  });

  it('puts the answers of concurrent calls right after the calls, in call order, before context stored meanwhile', () => {
    const flow = [
      ev('user', text('user', 'go')),
      ev('boss', {
        role: 'model',
        parts: [
          { functionCall: { id: 'a', name: 'ask_helper', args: {} } },
          { functionCall: { id: 'b', name: 'lookup', args: {} } },
        ],
      }),
      ev('boss', { role: 'user', parts: [{ functionResponse: { id: 'b', name: 'lookup', response: {} } }] }),
      ev('helper', text('model', 'helper thinking'), { branch: 'ask_helper@a' }),
      ev('boss', {
        role: 'user',
        parts: [{ functionResponse: { id: 'a', name: 'ask_helper', response: { result: 'x' } } }],
      }),
    ];
    const history = buildHistory(flow, { agentName: 'boss', includeContents: 'default' });
    expect(history.map((c) => c.parts.map((p) => p.functionResponse?.name ?? p.text))).toEqual([
      ['go'],
      [undefined, undefined],
      ['ask_helper', 'lookup'],
      ['For context:', '[helper] said: helper thinking'],
    ]);
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
