/**
 * engine.replay: 20 recorded runs of the example app (the writer pipeline, its
 * publisher's call approved by a human) replay on their recorded answers with 0 model and 0 tool calls and the
 * same outputs; after an instruction or a tool's parameters change in code, replay names the first divergent node
 * and both sides. PGlite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { pino } from 'pino';
import type { LlmAgent } from '../../src/index.js';
import { createEngine, FunctionTool, ScriptedModel, type BaseAgent, type Engine } from '../../src/index.js';
import { buildWriterPipeline, EXAMPLE_INPUT, scriptedReply } from '../../src/cli/dev/demo-app.js';
import { backends } from '../support/services/engines.js';

function find(agent: BaseAgent, name: string): LlmAgent {
  if (agent.name === name) return agent as LlmAgent;
  for (const child of agent.subAgents) {
    try {
      return find(child, name);
    } catch {
      // not under this child
    }
  }
  throw new Error(`no agent ${name}`);
}

/** An engine serving the writer pipeline (changed by `edit`), counting real model and tool calls. */
async function writerEngine(
  database: string | { pglite: string },
  edit: (root: BaseAgent) => void = () => undefined,
) {
  const model = new ScriptedModel({ respond: scriptedReply });
  const root = buildWriterPipeline(model);
  edit(root);
  const ledger = { tools: 0 };
  const engine = await createEngine({
    apps: [{ name: 'writer', agent: root }],
    database,
    queue: 'local',
    reconcileIntervalMs: 0,
    logger: pino({ level: 'error' }),
    observer: { onToolCall: () => ledger.tools++ },
  });
  return { engine, model, ledger };
}

async function record(engine: Engine, i: number): Promise<string> {
  const { invocationId } = await engine.enqueue({
    app: 'writer',
    userId: 'u',
    input: `${EXAMPLE_INPUT} #${i}`,
  });
  const paused = await engine.wait(invocationId, { timeoutMs: 30_000 });
  expect(paused.status).toBe('paused');
  await engine.confirm(paused.pending[0]!.callId, { confirmed: true, invocationId });
  expect((await engine.wait(invocationId, { timeoutMs: 30_000 })).status).toBe('completed');
  return invocationId;
}

describe.each(backends)('engine.replay on $name', (backend) => {
  it('replays 20 recorded runs with no model or tool call and the same outputs; a change in code names the first divergent node', async () => {
    const database = await backend.target();
    const recorded: string[] = [];
    {
      const { engine, model, ledger } = await writerEngine(database);
      try {
        for (let i = 0; i < 20; i++) recorded.push(await record(engine, i));
        const [calls, tools] = [model.calls, ledger.tools];
        expect(calls).toBe(20 * 8); // 2 researchers, 2 × (drafter, critic), publisher twice
        expect(tools).toBe(20 * 2); // exit_loop and publish_post
        for (const id of recorded) {
          const result = await engine.replay(id);
          expect(result, JSON.stringify(result)).toMatchObject({ diverged: false });
          const [was, now] = [await engine.get(id), await engine.get(result.replayId)];
          expect(now).toMatchObject({ status: 'completed', output: was.output, forkedFrom: id });
        }
        expect(model.calls).toBe(calls);
        expect(ledger.tools).toBe(tools);
      } finally {
        await engine.close();
      }
    }
    // The critic's instruction changed in code: its first model call is the first divergence.
    {
      const { engine, model, ledger } = await writerEngine(database, (root) => {
        const critic = find(root, 'critic');
        Object.assign(critic.options, { instruction: 'Be harsh about {draft}.' });
      });
      try {
        const result = await engine.replay(recorded[3]!);
        expect(result).toMatchObject({
          diverged: true,
          nodePath: 'writer_pipeline/refine/critic#0',
          expected: { instruction: expect.any(String) },
          actual: { instruction: expect.any(String), instruction_text: expect.stringContaining('Be harsh') },
        });
        if (result.diverged) {
          expect((result.expected as { instruction: string }).instruction).not.toBe(
            (result.actual as { instruction: string }).instruction,
          );
        }
        expect(model.calls).toBe(0);
        expect(ledger.tools).toBe(0);
      } finally {
        await engine.close();
      }
    }
    // publish_post takes another argument in code: the publisher is the first divergence.
    {
      const { engine, model } = await writerEngine(database, (root) => {
        const publish = new FunctionTool({
          name: 'publish_post',
          description: 'Publishes a post on the blog.',
          parameters: z.object({ title: z.string(), body: z.string(), tags: z.array(z.string()) }),
          execute: () => ({ published: true }),
        });
        Object.assign(find(root, 'publisher').options, { tools: [publish] });
      });
      try {
        const result = await engine.replay(recorded[5]!);
        expect(result).toMatchObject({
          diverged: true,
          nodePath: 'writer_pipeline/publisher',
          message: expect.stringContaining('tools or their parameters'),
          actual: { tools_offered: ['publish_post'] },
        });
        expect(model.calls).toBe(0);
      } finally {
        await engine.close();
      }
    }
  });
});
