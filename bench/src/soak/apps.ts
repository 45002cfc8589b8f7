/**
 * The apps of the soak (`npm run soak`), loaded by its `agentloom api` and `agentloom worker` processes:
 *
 * - `writer`: the example app exactly as `npm start` serves it (the reference pipeline on the same scripted
 *   model: parallel research → a draft/critique loop → a publisher whose tool needs a confirmation);
 * - `chores`: one LlmAgent and a tool, for the rest of the mix: `tidy` completes, `flaky` makes the tool throw
 *   (the model is told the error and still completes), `broken` makes the model throw (the run fails), `slow`
 *   makes the tool take 2 s (long enough to be cancelled while it runs).
 */
import * as z from 'zod';
import { buildWriterPipeline } from '../../../src/cli/dev/demo-app.js';
import { FunctionTool, LlmAgent, ScriptedModel, type AppDefinition } from '../../../src/index.js';

const chore = new FunctionTool({
  name: 'do_chore',
  description: 'Does a chore.',
  parameters: z.object({ what: z.string() }),
  execute: async ({ what }, ctx) => {
    if (what.includes('flaky')) throw new Error('the chore service is down');
    if (what.includes('slow')) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000);
        ctx.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return { done: what };
  },
});

const choresModel = new ScriptedModel({
  // Nothing reads its requests: keeping the default 1000 copies per process would grow the workers' heaps for the
  // half hour this model takes to receive them, which is the test double's buffer filling, not agentloom.
  keepRequests: 0,
  respond: (turn) => {
    const input = turn.contents.flatMap((c) => c.parts.map((p) => p.text ?? '')).join(' ');
    if (input.includes('broken')) throw new Error('scripted failure: the model is down');
    if (turn.callIndex === 0)
      return { functionCalls: [{ name: 'do_chore', args: { what: input.slice(0, 40) } }] };
    return 'Chore handled.';
  },
});

export const apps: AppDefinition[] = [
  { name: 'writer', agent: buildWriterPipeline() },
  {
    name: 'chores',
    agent: new LlmAgent({ name: 'chores', model: choresModel, instruction: 'Do the chore.', tools: [chore] }),
  },
];
