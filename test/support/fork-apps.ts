/** The apps of the fork tests: a writer loop and a research fan-out, one scripted model, a tool ledger. */
import * as z from 'zod';
import type { ScriptedModel } from '../../src/index.js';
import {
  exitLoop,
  FunctionTool,
  LlmAgent,
  LoopAgent,
  ParallelAgent,
  SequentialAgent,
  type ModelReply,
  type ScriptedTurn,
} from '../../src/index.js';

/** Counts every tool execution by tool name and argument. */
export class Ledger {
  readonly calls = new Map<string, number>();
  count(key: string): void {
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
  }
  get total(): number {
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }
}

function lookupTool(ledger: Ledger): FunctionTool {
  return new FunctionTool({
    name: 'lookup',
    description: 'looks a topic up',
    parameters: z.object({ q: z.string() }),
    execute: async ({ q }) => {
      ledger.count(`lookup:${q}`);
      return { found: `facts about ${q}` };
    },
  });
}

const hasResponse = (turn: ScriptedTurn): boolean =>
  turn.contents.at(-1)?.parts.some((p) => p.functionResponse !== undefined) ?? false;

/** The model of every agent: researchers look up once then answer; the critic exits when `approve` is set. */
export function respond(turn: ScriptedTurn): ModelReply {
  const { agentName, state } = turn;
  if (agentName === 'drafter')
    return `draft [${turn.systemInstruction}] after ${String(state.critique ?? 'none')}`;
  if (agentName === 'critic') {
    if (state.approve === true) return { functionCalls: [{ name: 'exit_loop', args: {} }] };
    return `critique of ${String(state.draft)}`;
  }
  if (agentName === 'summary')
    return `summary: ${String(state.web)} | ${String(state.docs)} | ${String(state.news)}`;
  // researcher, web, docs, news: one lookup, then a note naming the instruction.
  if (!hasResponse(turn)) return { functionCalls: [{ name: 'lookup', args: { q: agentName } }] };
  return `${agentName} notes [${turn.systemInstruction}]`;
}

export function forkApps(model: ScriptedModel, ledger: Ledger, maxIterations = 3) {
  // Reports 10 tokens a call, as a provider would (the diff sums them per node); counting stays on `model`.
  const counted = model;
  model = {
    name: counted.name,
    generate: async (request, options) => ({
      ...(await counted.generate(request, options)),
      usage: { promptTokens: 7, outputTokens: 3, totalTokens: 10 },
    }),
  } as ScriptedModel;
  const lookup = lookupTool(ledger);
  const llm = (name: string, options: Record<string, unknown> = {}) =>
    new LlmAgent({ name, model, instruction: `You are ${name}.`, ...options });
  const writer = new SequentialAgent({
    name: 'writer',
    subAgents: [
      llm('researcher', { tools: [lookup], outputKey: 'notes' }),
      new LoopAgent({
        name: 'refine',
        maxIterations,
        subAgents: [
          llm('drafter', { outputKey: 'draft' }),
          llm('critic', { outputKey: 'critique', tools: [exitLoop] }),
        ],
      }),
    ],
  });
  const fan = new SequentialAgent({
    name: 'fan',
    subAgents: [
      new ParallelAgent({
        name: 'research',
        subAgents: ['web', 'docs', 'news'].map((n) => llm(n, { tools: [lookup], outputKey: n })),
      }),
      llm('summary'),
    ],
  });
  return [
    { name: 'writer', agent: writer },
    { name: 'fan', agent: fan },
  ];
}
