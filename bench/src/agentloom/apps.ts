/**
 * The agentloom apps of the benchmark, loaded by the `agentloom worker` processes (`--apps`) and imported by the
 * bench process, so both compute the same definition hashes. Shapes are fixed (the scale changes repetitions,
 * never the trees):
 *
 * - `seq20` (W1) and `seq5` (W2): a SequentialAgent of custom leaves that each yield one event.
 * - `fan50` (W3): a ParallelAgent of 50 leaves that each sleep 200 ms, then a join leaf.
 * - `holder` (W4): one leaf that sleeps until its signal aborts (or 120 s).
 * - `approval` (W5): an LlmAgent whose model calls a FunctionTool with requireConfirmation: the run pauses.
 * - `stamped` (W6): a sequence of leaves that wait a moment, then emit an event carrying the wall clock.
 */
import {
  BaseAgent,
  createEvent,
  FunctionTool,
  LlmAgent,
  newId,
  ParallelAgent,
  SequentialAgent,
  type AppDefinition,
  type Event,
  type InvocationContext,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '../../../src/index.js';
import { sleep, wallMs } from '../measure.js';

export const W1_STEPS = 20;
export const W2_STEPS = 5;
export const W3_BRANCHES = 50;
export const W3_SLEEP_MS = 200;
export const W6_LEAVES = 40;
export const W6_GAP_MS = 25;
/** How long the W4 leaf would sleep if nothing stopped it. */
export const HOLDER_MS = 120_000;

/** A custom leaf that yields one model event. */
class Step extends BaseAgent {
  protected override async *runImpl(ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    yield createEvent({
      author: this.name,
      content: { role: 'model', parts: [{ text: `done ${ctx.nodePath}` }] },
    });
  }
}

/** A custom leaf that sleeps (stopping early when its step is aborted), then yields one event. */
class Sleeper extends BaseAgent {
  constructor(
    name: string,
    private readonly sleepMs: number,
  ) {
    super({ name });
  }

  protected override async *runImpl(ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    await sleep(this.sleepMs, ctx.signal);
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'slept' }] } });
  }
}

/**
 * W6: waits `gapMs` (so the follower is idle when the event arrives), then yields an event whose text is the
 * wall clock (ms since the epoch, sub-ms) taken right before the event is handed to the engine to store.
 */
class Stamped extends BaseAgent {
  constructor(
    name: string,
    private readonly gapMs: number,
  ) {
    super({ name });
  }

  protected override async *runImpl(ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    await sleep(this.gapMs, ctx.signal);
    yield createEvent({
      author: this.name,
      content: { role: 'model', parts: [{ text: `stamp ${wallMs()}` }] },
    });
  }
}

/**
 * W5's model: asks for the `publish` tool on its first call, answers text after. It keeps no history (unlike
 * ScriptedModel, which records every request and would grow the worker's memory by itself).
 */
class PublishingModel implements Model {
  readonly name = 'bench-publisher';

  async generate(request: ModelRequest): Promise<ModelResponse> {
    const content: ModelResponse['content'] =
      request.callIndex === 0
        ? {
            role: 'model',
            parts: [{ functionCall: { id: newId('call'), name: 'publish', args: { post: 'hi' } } }],
          }
        : { role: 'model', parts: [{ text: 'published' }] };
    return { content, finishReason: 'STOP' };
  }
}

const publish = new FunctionTool({
  name: 'publish',
  description: 'Publishes a post (a human confirms first).',
  requireConfirmation: true,
  execute: async (args: Record<string, unknown>) => ({ published: args.post ?? null }),
});

function sequence(name: string, steps: number): SequentialAgent {
  return new SequentialAgent({
    name,
    subAgents: Array.from({ length: steps }, (_, i) => new Step({ name: `s${i}` })),
  });
}

/** W3's tree: 50 sleeping leaves in parallel, then a join leaf. */
function fanOut(): SequentialAgent {
  const branches = Array.from({ length: W3_BRANCHES }, (_, i) => new Sleeper(`b${i}`, W3_SLEEP_MS));
  return new SequentialAgent({
    name: 'fan_join',
    subAgents: [new ParallelAgent({ name: 'fan', subAgents: branches }), new Step({ name: 'join' })],
  });
}

export const apps: AppDefinition[] = [
  { name: 'seq20', agent: sequence('pipe20', W1_STEPS) },
  { name: 'seq5', agent: sequence('pipe5', W2_STEPS) },
  { name: 'fan50', agent: fanOut() },
  { name: 'holder', agent: new Sleeper('holder', HOLDER_MS) },
  {
    name: 'approval',
    agent: new LlmAgent({ name: 'approver', model: new PublishingModel(), tools: [publish] }),
  },
  {
    name: 'stamped',
    agent: new SequentialAgent({
      name: 'stamps',
      subAgents: Array.from({ length: W6_LEAVES }, (_, i) => new Stamped(`t${i}`, W6_GAP_MS)),
    }),
  },
];
