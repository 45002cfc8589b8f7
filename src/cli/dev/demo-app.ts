/**
 * The reference pipeline (shared/reference 000): parallel research → a draft/critique loop that ends with
 * `exit_loop` → a publisher whose tool needs a human's confirmation. Offline it runs on scripted models; with a
 * Gemini API key it runs the same tree on Gemini.
 */
import * as z from 'zod';
import {
  exitLoop,
  FunctionTool,
  LlmAgent,
  LoopAgent,
  ParallelAgent,
  ScriptedModel,
  SequentialAgent,
  type AppDefinition,
  type Model,
  type ModelReply,
  type ScriptedTurn,
} from '../../index.js';

/** Scripted answers of each agent of the demo, deterministic and offline. */
function scriptedReply(turn: ScriptedTurn): ModelReply {
  switch (turn.agentName) {
    case 'research_web':
      return 'Web: durable execution frameworks checkpoint each step so a crash loses nothing.';
    case 'research_docs':
      return 'Docs: ADK composes agents with Sequential, Parallel and Loop workflow agents.';
    case 'drafter':
      return turn.state.critique
        ? 'Durable agents: every step is checkpointed in Postgres, so work survives crashes and waits for humans. (revised)'
        : 'Agents that never lose work: checkpoints make them durable.';
    case 'critic':
      return String(turn.state.draft ?? '').includes('(revised)')
        ? { functionCalls: [{ name: 'exit_loop', args: {} }] }
        : 'Mention Postgres checkpoints and human approval explicitly.';
    case 'publisher':
      return turn.callIndex === 0
        ? {
            functionCalls: [
              {
                name: 'publish_post',
                args: { title: 'Durable agents', body: String(turn.state.draft ?? '') },
              },
            ],
          }
        : 'Published "Durable agents".';
    default:
      return 'ok';
  }
}

/** The publish tool: a side effect that a human must approve. */
export const publishPost = new FunctionTool({
  name: 'publish_post',
  description: 'Publishes a post on the blog.',
  parameters: z.object({ title: z.string(), body: z.string() }),
  requireConfirmation: true,
  execute: ({ title }, ctx) => ({
    published: true,
    title,
    url: `https://blog.example/${ctx.functionCallId}`,
  }),
});

/** Builds the writer pipeline; `model` is a Gemini model id or a Model instance (default: scripted). */
export function buildWriterPipeline(
  model: Model | string = new ScriptedModel({ respond: scriptedReply }),
): SequentialAgent {
  const llm = (options: ConstructorParameters<typeof LlmAgent>[0]) => new LlmAgent({ model, ...options });
  return new SequentialAgent({
    name: 'writer_pipeline',
    subAgents: [
      new ParallelAgent({
        name: 'research',
        subAgents: [
          llm({
            name: 'research_web',
            instruction: 'Research the topic on the web. Answer with short notes.',
            outputKey: 'web_notes',
          }),
          llm({
            name: 'research_docs',
            instruction: 'Research the topic in documentation. Answer with short notes.',
            outputKey: 'doc_notes',
          }),
        ],
      }),
      new LoopAgent({
        name: 'refine',
        maxIterations: 5,
        subAgents: [
          llm({
            name: 'drafter',
            instruction:
              'Write a two-sentence draft using {web_notes} and {doc_notes}. Revise it if a critique exists: {critique?}',
            outputKey: 'draft',
          }),
          llm({
            name: 'critic',
            instruction:
              'Critique the draft: {draft}. If it is good enough, call exit_loop; otherwise answer with one improvement.',
            outputKey: 'critique',
            tools: [exitLoop],
          }),
        ],
      }),
      llm({
        name: 'publisher',
        instruction: 'Publish the final draft: {draft}. Use publish_post.',
        tools: [publishPost],
      }),
    ],
  });
}

/** The name the example app is served under (`agentloom dev` without `--apps`, `agentloom demo`). */
export const EXAMPLE_APP = 'writer';

/** The input of the example run that `npm start` and `agentloom demo` enqueue. */
export const EXAMPLE_INPUT = 'Write a short post about durable AI agents';

/** The example app: the writer pipeline on scripted models, or on Gemini when `gemini` is true. */
export function exampleApps(gemini = false): AppDefinition[] {
  return [{ name: EXAMPLE_APP, agent: buildWriterPipeline(gemini ? 'gemini-2.5-flash' : undefined) }];
}

export { scriptedReply };
