/**
 * The engine's observer on a real run: every leaf step is reported with its outcome, and model and tool calls are
 * reported also for instances an agent holds (not only for those registered by name), each call once.
 */
import { describe, expect, it } from 'vitest';
import {
  FunctionTool,
  SequentialAgent,
  type ModelCallEnd,
  type StepEnd,
  type StepRun,
  type ToolCallEnd,
} from '../../src/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

describe.each(backends)('engine observer on $name', (backend) => {
  it('reports each step, and the calls of model and tool instances held by agents', async () => {
    const steps: StepRun[] = [];
    const jobs: StepEnd[] = [];
    const models: ModelCallEnd[] = [];
    const tools: ToolCallEnd[] = [];
    const lookup = new FunctionTool({
      name: 'lookup',
      description: 'Looks up.',
      execute: () => ({ found: true }),
    });
    const first = scripted('first', (turn) => (turn.callIndex === 0 ? call('lookup') : 'first done'), {
      tools: [lookup],
    });
    const second = scripted('second', 'second done');
    const engine = await engineOn(backend, {
      apps: [{ name: 'observed', agent: new SequentialAgent({ name: 'pipe', subAgents: [first, second] }) }],
      observer: {
        onStep: (s) => steps.push(s),
        onStepEnd: (j) => jobs.push(j),
        onModelCall: (m) => models.push(m),
        onToolCall: (t) => tools.push(t),
      },
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'observed', userId: 'u', input: 'go' });
      expect((await engine.wait(invocationId, { timeoutMs: 30_000 })).status).toBe('completed');
      expect(steps.map((s) => [s.path, s.outcome])).toEqual([
        ['pipe/first', 'completed'],
        ['pipe/second', 'completed'],
      ]);
      expect(models.map((m) => [m.agent, m.outcome])).toEqual([
        ['first', 'ok'],
        ['first', 'ok'],
        ['second', 'ok'],
      ]);
      expect(tools.map((t) => [t.tool, t.agent, t.outcome])).toEqual([['lookup', 'first', 'ok']]);
      expect(jobs.length).toBeGreaterThan(0);
      expect(jobs.every((j) => j.outcome === 'ok' && (j.queueWaitMs ?? -1) >= 0)).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
