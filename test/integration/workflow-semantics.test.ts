/**
 * Conformance of the workflow agents to SEMANTICS §2 (sequence, parallel, loop, composition), run by the real
 * engine on PGlite and on PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  BaseAgent,
  exitLoop,
  FunctionTool,
  LoopAgent,
  ParallelAgent,
  SequentialAgent,
  type Engine,
  type Event,
} from '../../src/index.js';
import { SaysPath, scripted, seenText } from '../fixtures/agents.js';
import { backends, engineOn, type Backend } from '../support/services/engines.js';

async function run(
  backend: Backend,
  agent: BaseAgent,
  input = 'go',
  options: Parameters<Engine['enqueue']>[0] extends infer T ? Partial<T> : never = {},
) {
  const engine = await engineOn(backend, { apps: [{ name: 'app', agent }] });
  try {
    const { invocationId, sessionId } = await engine.enqueue({ app: 'app', userId: 'u1', input, ...options });
    const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
    const events: Event[] = [];
    for await (const e of engine.events(invocationId)) events.push(e);
    const session = await engine.getSession(sessionId);
    return { result, events, session, engine };
  } finally {
    await engine.close();
  }
}

describe.each(backends)('workflow agents on $name', (backend) => {
  it('runs a sequence in order and passes state through outputKey and {key} templates', async () => {
    const first = scripted('first', 'tea', { outputKey: 'topic' });
    const second = scripted('second', (turn) => `essay about ${turn.systemInstruction}`, {
      instruction: 'Write about {topic}',
      outputKey: 'essay',
    });
    const { result, events, session } = await run(
      backend,
      new SequentialAgent({ name: 'pipe', subAgents: [first, second] }),
    );
    expect(result.status).toBe('completed');
    expect(result.output).toBe('essay about Write about tea');
    expect(session.state).toMatchObject({ topic: 'tea', essay: 'essay about Write about tea' });
    const authors = events.filter((e) => e.content).map((e) => e.author);
    expect(authors).toEqual(['user', 'first', 'second']);
    // The second agent saw the first one's answer as context.
    expect(seenText(second.model.requests[0] as never)).toContain('[first] said: tea');
  });

  it('emits {completedSubAgents} checkpoint events after each child but the last, then endOfAgent', async () => {
    const agents = ['a', 'b', 'c'].map((n) => scripted(n, n));
    const { events } = await run(backend, new SequentialAgent({ name: 'seq', subAgents: agents }));
    const checkpoints = events
      .filter((e) => e.author === 'seq' && e.actions.agentState)
      .map((e) => e.actions.agentState);
    expect(checkpoints).toEqual([{ completedSubAgents: 1 }, { completedSubAgents: 2 }]);
    expect(events.filter((e) => e.author === 'seq' && e.actions.endOfAgent)).toHaveLength(1);
  });

  it('ends a sequence when a child escalates and forwards the escalation', async () => {
    const stopper = scripted(
      'stopper',
      (turn) => (turn.callIndex === 0 ? { functionCalls: [{ name: 'exit_loop', args: {} }] } : 'x'),
      {
        tools: [exitLoop],
      },
    );
    const never = scripted('never', 'should not run');
    const { result } = await run(
      backend,
      new SequentialAgent({ name: 'seq', subAgents: [scripted('before', 'ok'), stopper, never] }),
    );
    expect(result.status).toBe('completed');
    expect(result.escalated).toBe(true);
    expect(never.model.calls).toBe(0);
  });

  it('stamps parallel branches and never shows a branch its siblings', async () => {
    const web = scripted('web', 'web notes', { outputKey: 'web_notes' });
    const docs = scripted('docs', 'doc notes', { outputKey: 'doc_notes' });
    const after = scripted('after', 'summary');
    const root = new SequentialAgent({
      name: 'root',
      subAgents: [new ParallelAgent({ name: 'research', subAgents: [web, docs] }), after],
    });
    const { result, events } = await run(backend, root);
    expect(result.status).toBe('completed');
    expect(events.find((e) => e.author === 'web' && e.content)?.branch).toBe('research.0');
    expect(events.find((e) => e.author === 'docs' && e.content)?.branch).toBe('research.1');
    expect(seenText(web.model.requests[0] as never)).not.toContain('doc notes');
    expect(seenText(docs.model.requests[0] as never)).not.toContain('web notes');
    // After the fan-out, the next agent sees every branch.
    const seenAfter = seenText(after.model.requests[0] as never);
    expect(seenAfter).toContain('web notes');
    expect(seenAfter).toContain('doc notes');
  });

  it('loses no appendToState entry from 3 parallel branches', async () => {
    const record = new FunctionTool({
      name: 'record',
      description: 'records a finding',
      parameters: z.object({ finding: z.string() }),
      execute: ({ finding }, ctx) => {
        ctx.appendToState('findings', finding);
        return { ok: true };
      },
    });
    const branch = (n: number) =>
      scripted(
        `b${n}`,
        (turn) =>
          turn.callIndex === 0 ? { functionCalls: [{ name: 'record', args: { finding: `f${n}` } }] } : 'done',
        {
          tools: [record],
        },
      );
    const { result, session } = await run(
      backend,
      new ParallelAgent({ name: 'fan', subAgents: [branch(0), branch(1), branch(2)] }),
    );
    expect(result.status).toBe('completed');
    expect((session.state.findings as string[]).sort()).toEqual(['f0', 'f1', 'f2']);
  });

  it('ends a loop on exit_loop (normal end) and on maxIterations (normal end)', async () => {
    const critic = scripted(
      'critic',
      (turn) =>
        turn.state.draft === 'draft 2' ? { functionCalls: [{ name: 'exit_loop', args: {} }] } : 'more',
      {
        tools: [exitLoop],
      },
    );
    let drafts = 0;
    const drafter = scripted('drafter', () => `draft ${++drafts}`, { outputKey: 'draft' });
    const loop = new LoopAgent({ name: 'refine', maxIterations: 5, subAgents: [drafter, critic] });
    const exited = await run(backend, loop);
    expect(exited.result.status).toBe('completed');
    expect(exited.result.escalated).toBe(false);
    expect(drafter.model.calls).toBe(2);
    expect(exited.events.some((e) => e.nodePath === 'refine/drafter#1')).toBe(true);

    const capped = scripted('capped', 'again');
    const capLoop = new LoopAgent({ name: 'cap', maxIterations: 3, subAgents: [capped] });
    const cappedRun = await run(backend, capLoop);
    expect(cappedRun.result.status).toBe('completed');
    expect(capped.model.calls).toBe(3);
  });

  it("consumes an inner loop's exit in the inner loop: the outer loop continues", async () => {
    const innerExit = scripted(
      'inner_exit',
      (turn) => (turn.callIndex === 0 ? { functionCalls: [{ name: 'exit_loop', args: {} }] } : 'x'),
      {
        tools: [exitLoop],
      },
    );
    const inner = new LoopAgent({ name: 'inner', maxIterations: 10, subAgents: [innerExit] });
    const counter = scripted('counter', 'tick');
    const outer = new LoopAgent({ name: 'outer', maxIterations: 3, subAgents: [inner, counter] });
    const { result } = await run(backend, outer);
    expect(result.status).toBe('completed');
    expect(counter.model.calls).toBe(3);
    expect(innerExit.model.calls).toBe(3);
  });

  it('runs custom agents, fails a parallel when a branch fails while siblings finish', async () => {
    class Boom extends BaseAgent {
      // eslint-disable-next-line require-yield
      protected override async *runImpl(): AsyncGenerator<Event> {
        throw new Error('boom');
      }
    }
    const sibling = scripted('sibling', 'fine');
    const { result, events } = await run(
      backend,
      new ParallelAgent({
        name: 'par',
        subAgents: [new SaysPath('echo', 'echo from'), new Boom({ name: 'boom' }), sibling],
      }),
    );
    expect(
      events.some((e) => e.author === 'echo' && e.content?.parts[0]?.text === 'echo from par/echo'),
    ).toBe(true);
    expect(sibling.model.calls).toBe(1);
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/boom: boom/);
  });

  it('rejects bad workflow definitions at construction with the agent name', () => {
    expect(() => new SequentialAgent({ name: 's', subAgents: [] })).toThrow(
      /SequentialAgent "s": subAgents must not be empty/,
    );
    expect(() => new LoopAgent({ name: 'l', maxIterations: 0, subAgents: [scripted('x', 'x')] })).toThrow(
      /LoopAgent "l": maxIterations/,
    );
    const shared = scripted('shared', 'x');
    new SequentialAgent({ name: 'p1', subAgents: [shared] });
    expect(() => new SequentialAgent({ name: 'p2', subAgents: [shared] })).toThrow(/already has parent "p1"/);
    expect(() => scripted('user', 'x')).toThrow(/reserved/);
  });
});
