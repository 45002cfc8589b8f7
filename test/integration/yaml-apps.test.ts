/**
 * Declarative apps run end to end on the embedded engine: examples/writer.yaml (Sequential → Parallel → Loop
 * ended by exit_loop) and the kagent manifests of examples/kagent (a root offering a Sequential workflow as an
 * AgentTool), both driven by a ScriptedModel registered by name in `models`.
 */
import { describe, expect, it } from 'vitest';
import { loadAppsFromYaml } from '../../src/config/apps/load-apps.js';
import {
  ScriptedModel,
  type Engine,
  type Event,
  type ModelReply,
  type ScriptedTurn,
} from '../../src/index.js';
import { backends, engineOn } from '../support/services/engines.js';
import { kagentExample } from '../support/processes/kagent-example.js';

async function runToEnd(engine: Engine, app: string, input: string) {
  const { invocationId, sessionId } = await engine.enqueue({ app, userId: 'u1', input });
  const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
  const events: Event[] = [];
  for await (const e of engine.events(invocationId)) events.push(e);
  return { result, events, session: await engine.getSession(sessionId) };
}

/** The writer pipeline's agents: the critic accepts the second draft with exit_loop. */
function writerReply(turn: ScriptedTurn): ModelReply {
  switch (turn.agentName) {
    case 'research_web':
      return 'web: checkpoints make agents durable';
    case 'research_docs':
      return 'docs: workflow agents compose';
    case 'drafter':
      return turn.state.critique ? 'Durable agents, revised after critique' : 'Durable agents, first draft';
    case 'critic':
      return String(turn.state.draft).includes('revised')
        ? { functionCalls: [{ name: 'exit_loop', args: {} }] }
        : 'Say why checkpoints matter.';
    default:
      return `unexpected agent ${turn.agentName}`;
  }
}

describe('declarative apps on the embedded engine', () => {
  const backend = backends[0];
  if (!backend) throw new Error('no backend');

  it('runs examples/writer.yaml: parallel research, then a draft/critique loop that exit_loop ends', async () => {
    // The file names Gemini; a model registered under that name wins, so the same file runs offline.
    const model = new ScriptedModel({ respond: writerReply });
    const models = { 'gemini-2.5-flash': model };
    const loaded = await loadAppsFromYaml('examples/writer.yaml', { tools: {}, models });
    const engine = await engineOn(backend, { apps: loaded.apps, models, tools: {} });
    try {
      const { result, events, session } = await runToEnd(engine, 'writer', 'durable agents');
      expect(result.status).toBe('completed');
      expect(result.output).toBe('Durable agents, revised after critique');
      expect(session.state).toMatchObject({
        web_notes: 'web: checkpoints make agents durable',
        doc_notes: 'docs: workflow agents compose',
        draft: 'Durable agents, revised after critique',
        critique: 'Say why checkpoints matter.',
      });
      // The drafter saw both research notes (the instruction template of the YAML was rendered).
      const firstDraft = model.requests.find((r) => r.agentName === 'drafter');
      expect(firstDraft?.systemInstruction).toContain(
        'Write a draft using web: checkpoints make agents durable and docs: workflow agents compose.',
      );
      // Two iterations of the loop (of maxIterations 5): exit_loop ended it.
      expect(model.callsBy('drafter')).toBe(2);
      expect(model.callsBy('critic')).toBe(2);
      expect(events.some((e) => e.author === 'critic' && e.actions.escalate)).toBe(true);
      // The research agents ran on their parallel branches.
      const branches = events
        .filter((e) => e.author.startsWith('research_') && e.content)
        .map((e) => e.branch);
      expect(branches.sort()).toEqual(['research.0', 'research.1']);
    } finally {
      await engine.close();
    }
  });

  it('runs examples/kagent: the root calls its Sequential workflow as a tool, the steps run in order', async () => {
    const model = new ScriptedModel({
      respond: (turn) => {
        switch (turn.agentName) {
          case 'code_development_pipeline':
            return {
              functionCalls: [
                {
                  name: 'code_development_pipeline_development_pipeline_sequential',
                  args: { request: 'fib' },
                },
              ],
            };
          case 'code_writer':
            return 'def fib(n): ...';
          case 'code_reviewer':
            return 'fib is not memoised';
          case 'code_refactorer':
            return 'def fib(n): memoised';
          default:
            return `unexpected agent ${turn.agentName}`;
        }
      },
    });
    const models = { 'default-model-config': model };
    // Its Agents' MCP servers running here (the scripts below call none of their tools).
    const example = await kagentExample();
    const loaded = await loadAppsFromYaml(example.dir, { tools: {}, models });
    const engine = await engineOn(backend, { apps: loaded.apps, models, tools: {} });
    try {
      const { result, events } = await runToEnd(engine, 'code-development-pipeline', 'write fib');
      expect(result.status).toBe('completed');
      const steps = events.filter(
        (e) => e.content && e.author.startsWith('code_') && e.author !== 'code_development_pipeline',
      );
      expect(steps.map((e) => e.author)).toEqual(['code_writer', 'code_reviewer', 'code_refactorer']);
      // Each step saw the one before it (one shared session).
      const review = model.requests.find((r) => r.agentName === 'code_refactorer');
      expect(JSON.stringify(review?.contents)).toContain('fib is not memoised');
      expect(review?.systemInstruction).toBe('Refactor the code so that it addresses the review.');
      // The workflow tool skips summarisation (as kagent offers workflows): its answer ends the root's turn.
      expect(model.callsBy('code_development_pipeline')).toBe(1);
      expect(result.output).toBe('def fib(n): memoised');
      const answer = events.flatMap((e) => e.content?.parts ?? []).find((p) => p.functionResponse);
      expect(answer?.functionResponse?.response).toEqual({ result: 'def fib(n): memoised' });
    } finally {
      await engine.close();
      await example.close();
    }
  });
});
