/** Small builders for test agents driven by scripted models. */
import {
  BaseAgent,
  createEvent,
  LlmAgent,
  ScriptedModel,
  type Event,
  type LlmAgentOptions,
  type ModelReply,
  type ScriptedTurn,
} from '../../src/index.js';

/** An LlmAgent whose model answers with `reply` (a fixed text or a function of the turn). */
export function scripted(
  name: string,
  reply: ModelReply | ((turn: ScriptedTurn) => ModelReply | Promise<ModelReply>),
  options: Partial<LlmAgentOptions> = {},
): LlmAgent & { model: ScriptedModel } {
  const model = new ScriptedModel({ respond: (turn) => (typeof reply === 'function' ? reply(turn) : reply) });
  const agent = new LlmAgent({ name, model, ...options }) as LlmAgent & { model: ScriptedModel };
  Object.defineProperty(agent, 'model', { value: model });
  return agent;
}

/** All text of a turn's contents, for asserting on what a model saw. */
export function seenText(turn: ScriptedTurn): string {
  return turn.contents
    .flatMap((c) => c.parts.map((p) => p.text ?? JSON.stringify(p.functionCall ?? p.functionResponse ?? '')))
    .join('\n');
}

/** A scripted reply that calls one tool. */
export function call(
  name: string,
  args: Record<string, unknown> = {},
): { functionCalls: { name: string; args: Record<string, unknown> }[] } {
  return { functionCalls: [{ name, args }] };
}

/** A promise and the function that resolves it. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A custom leaf that waits for `wait`, then says its name (one event) and ends. */
export class GatedLeaf extends BaseAgent {
  constructor(
    name: string,
    private readonly wait: Promise<void>,
  ) {
    super({ name });
  }

  protected override async *runImpl(): AsyncGenerator<Event, void, undefined> {
    await this.wait;
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: this.name }] } });
  }
}
