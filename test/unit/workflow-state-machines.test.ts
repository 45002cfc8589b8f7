/** The workflow agents' pure state machines, fed child statuses directly. */
import { describe, expect, it } from 'vitest';
import {
  LoopAgent,
  ParallelAgent,
  SequentialAgent,
  type ChildView,
  type NodeStatus,
} from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';

function view(
  path: string,
  checkpoint: Record<string, unknown>,
  children: Record<string, [NodeStatus, boolean?]>,
) {
  return {
    path,
    branch: undefined,
    checkpoint,
    child: (p: string): ChildView | undefined => {
      const c = children[p];
      return c && { path: p, status: c[0], escalated: c[1] ?? false };
    },
  };
}

describe('SequentialAgent.advance', () => {
  const seq = new SequentialAgent({ name: 's', subAgents: [scripted('a', 'a'), scripted('b', 'b')] });
  it('starts the first child, then the next, and never restarts a completed child', () => {
    expect(seq.advance(view('s', {}, {})).start.map((c) => c.path)).toEqual(['s/a']);
    const d = seq.advance(view('s', { completedSubAgents: 0 }, { 's/a': ['completed'] }));
    expect(d.start.map((c) => c.path)).toEqual(['s/b']);
    expect(d.checkpoint).toEqual({ completedSubAgents: 1 });
    // Crash between "child completed" and "parent advanced": the checkpoint is behind, the child row is not.
    const after = seq.advance(
      view('s', { completedSubAgents: 0 }, { 's/a': ['completed'], 's/b': ['completed'] }),
    );
    expect(after.status).toBe('completed');
    expect(after.start).toEqual([]);
  });
  it('pauses with a paused child and ends escalated on an escalating child', () => {
    expect(seq.advance(view('s', {}, { 's/a': ['paused'] })).status).toBe('paused');
    const esc = seq.advance(view('s', {}, { 's/a': ['completed', true] }));
    expect(esc).toMatchObject({ status: 'completed', escalated: true, start: [] });
  });
});

describe('LoopAgent.advance', () => {
  const loop = new LoopAgent({ name: 'l', maxIterations: 2, subAgents: [scripted('x', 'x')] });
  it('runs iterations with #n paths, consumes an escalation, and ends at the cap', () => {
    const second = loop.advance(view('l', {}, { 'l/x#0': ['completed'] }));
    expect(second.start.map((c) => c.path)).toEqual(['l/x#1']);
    expect(second.checkpoint).toEqual({ iteration: 1, completedSubAgents: 0 });
    expect(
      loop.advance(view('l', { iteration: 1 }, { 'l/x#0': ['completed'], 'l/x#1': ['completed'] })),
    ).toMatchObject({
      status: 'completed',
      escalated: false,
      checkpoint: { exitedBy: 'maxIterations' },
    });
    expect(loop.advance(view('l', {}, { 'l/x#0': ['completed', true] }))).toMatchObject({
      status: 'completed',
      escalated: false,
      checkpoint: { exitedBy: 'escalation' },
    });
  });
});

describe('ParallelAgent.advance', () => {
  const par = new ParallelAgent({ name: 'p', subAgents: [scripted('m', 'm'), scripted('n', 'n')] });
  it('starts every child on its own branch and settles only when all have', () => {
    const start = par.advance(view('p', {}, {}));
    expect(start.start.map((c) => [c.path, c.branch])).toEqual([
      ['p/m', 'p.0'],
      ['p/n', 'p.1'],
    ]);
    expect(par.advance(view('p', {}, { 'p/m': ['failed'], 'p/n': ['running'] })).status).toBe('running');
    expect(par.advance(view('p', {}, { 'p/m': ['completed'], 'p/n': ['paused'] })).status).toBe('paused');
    expect(par.advance(view('p', {}, { 'p/m': ['failed'], 'p/n': ['completed'] })).status).toBe('failed');
    const budget = { code: 'LLM_CALL_BUDGET_EXCEEDED', message: 'spent' };
    const both = par.advance({
      ...view('p', {}, {}),
      child: (p: string) => ({ path: p, status: 'failed' as const, escalated: false, error: budget }),
    });
    expect(both.error?.code).toBe('LLM_CALL_BUDGET_EXCEEDED');
    expect(par.advance(view('p', {}, { 'p/m': ['completed', true], 'p/n': ['completed'] }))).toMatchObject({
      status: 'completed',
      escalated: true,
    });
  });
});

describe('notStarted: children the engine need not read', () => {
  const leaves = () => [scripted('a', 'a'), scripted('b', 'b')];
  it('knows no child exists before the first advance stored a checkpoint', () => {
    const seq = new SequentialAgent({ name: 's', subAgents: leaves() });
    const loop = new LoopAgent({ name: 'l', subAgents: leaves(), maxIterations: 2 });
    const par = new ParallelAgent({ name: 'p', subAgents: leaves() });
    expect(seq.notStarted({}, 's/a')).toBe(true);
    expect(loop.notStarted({}, 'l/a#0')).toBe(true);
    expect(par.notStarted({}, 'p/a')).toBe(true);
  });
  it('after it, rules out only children that start later', () => {
    const seq = new SequentialAgent({ name: 's', subAgents: leaves() });
    const loop = new LoopAgent({ name: 'l', subAgents: leaves(), maxIterations: 2 });
    const par = new ParallelAgent({ name: 'p', subAgents: leaves() });
    expect(seq.notStarted({ completedSubAgents: 0 }, 's/a')).toBe(false);
    expect(seq.notStarted({ completedSubAgents: 0 }, 's/b')).toBe(true);
    expect(loop.notStarted({ iteration: 0, completedSubAgents: 0 }, 'l/a#0')).toBe(false);
    expect(loop.notStarted({ iteration: 0, completedSubAgents: 0 }, 'l/a#1')).toBe(true);
    expect(par.notStarted({ children: { a: 'pending', b: 'pending' } }, 'p/a')).toBe(false);
  });
});
