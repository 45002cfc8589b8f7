/**
 * ScriptedModel: a deterministic, offline {@link Model}. A `respond` function decides each answer from the turn
 * it is shown; every request is recorded so tests can assert what the agent sent and how often it called.
 */
import type { Content, Part } from '../core/content.js';
import { AgentloomError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { GenerateOptions, Model, ModelRequest, ModelResponse, ModelUsage } from './model.js';

/** What a {@link ScriptedModel}'s `respond` function sees of one model call. */
export interface ScriptedTurn {
  /** The agent making the call. */
  agentName: string;
  /** 0-based index of this call within the agent's current node activation. */
  callIndex: number;
  /** The rendered system instruction ('' when none). */
  systemInstruction: string;
  /** The conversation sent to the model, oldest first (a copy: mutating it changes nothing). */
  contents: Content[];
  /** Names of the tools offered to the model, in declaration order. */
  toolNames: string[];
  /** The session state the agent sees (a copy). */
  state: Record<string, unknown>;
}

/** A function call in a scripted reply; `id` defaults to a fresh `call_…` id. */
export interface ScriptedFunctionCall {
  name: string;
  args?: Record<string, unknown>;
  id?: string;
}

/**
 * A scripted answer: a string is final text; an object gives text and/or function calls (text first); a
 * {@link Content} is used as is (its role is forced to 'model').
 */
export type ModelReply = string | { text?: string; functionCalls?: ScriptedFunctionCall[] } | Content;

/** Options of {@link ScriptedModel}. */
export interface ScriptedModelOptions {
  /** Decides the answer of each call. Throwing (or rejecting) makes `generate` reject with that error. */
  respond: (turn: ScriptedTurn) => ModelReply | Promise<ModelReply>;
  /** Name for logs and errors. Default 'scripted'. */
  name?: string;
  /**
   * How many of the latest requests `requests` keeps (a long-running process, like the example app `npm start`
   * serves, would otherwise keep every request it was ever sent). `calls` and `callsBy` count them all. Default 1000.
   */
  keepRequests?: number;
  /**
   * The token usage each answer reports, as a provider's would (budgets count it): fixed, or decided per turn.
   * Default: none reported.
   */
  usage?: ModelUsage | ((turn: ScriptedTurn) => ModelUsage | undefined);
}

/** A deterministic model driven by a `respond` function; what tests, examples and the offline demo use. */
export class ScriptedModel implements Model {
  readonly name: string;
  readonly provider = 'scripted';
  /**
   * The latest requests received (`keepRequests` of them), oldest first (deep copies taken at the call, without
   * their `signal`).
   */
  readonly requests: ModelRequest[] = [];
  readonly #respond: ScriptedModelOptions['respond'];
  readonly #keep: number;
  readonly #usage: ScriptedModelOptions['usage'];
  #calls = 0;
  readonly #callsBy = new Map<string, number>();

  constructor(options: ScriptedModelOptions) {
    this.name = options.name ?? 'scripted';
    this.#respond = options.respond;
    const keep = options.keepRequests ?? 1000;
    if (!Number.isInteger(keep) || keep < 0) {
      throw new AgentloomError('VALIDATION', 'keepRequests: must be a whole number ≥ 0 (default 1000)', {
        details: { field: 'keepRequests' },
      });
    }
    this.#keep = keep;
    this.#usage = options.usage;
  }

  /** How many calls were made so far (including calls whose `respond` threw). */
  get calls(): number {
    return this.#calls;
  }

  /** How many calls the named agent made so far. */
  callsBy(agentName: string): number {
    return this.#callsBy.get(agentName) ?? 0;
  }

  /**
   * Records the request, asks `respond` and returns its reply as a model {@link Content}. Rejects with
   * `CANCELLED` when `request.signal` is aborted (before the call is recorded, or before the reply is returned).
   */
  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    throwIfAborted(request.signal, this.name);
    const copy = copyRequest(request);
    this.#calls++;
    this.#callsBy.set(copy.agentName, (this.#callsBy.get(copy.agentName) ?? 0) + 1);
    this.requests.push(copy);
    if (this.requests.length > this.#keep) this.requests.splice(0, this.requests.length - this.#keep);
    const turn = (): ScriptedTurn => ({
      agentName: copy.agentName,
      callIndex: copy.callIndex,
      systemInstruction: copy.systemInstruction,
      contents: structuredClone(copy.contents),
      toolNames: copy.tools.map((t) => t.name),
      state: structuredClone(copy.state),
    });
    const reply = await this.#respond(turn());
    const usage = typeof this.#usage === 'function' ? this.#usage(turn()) : this.#usage;
    throwIfAborted(request.signal, this.name);
    const content = toContent(reply);
    const text = content.parts
      .filter((p) => p.text !== undefined && !p.thought)
      .map((p) => p.text)
      .join('');
    if (options?.onPartial && text !== '') options.onPartial({ role: 'model', parts: [{ text }] });
    return usage ? { content, finishReason: 'STOP', usage: { ...usage } } : { content, finishReason: 'STOP' };
  }
}

function throwIfAborted(signal: AbortSignal | undefined, name: string): void {
  if (signal?.aborted) {
    throw new AgentloomError('CANCELLED', `The call to model '${name}' was cancelled.`, {
      cause: signal.reason,
    });
  }
}

/**
 * A deep copy of the request's data, without its signal: a kept request must not hold its step alive (the step's
 * abort listeners on the signal reach its whole runtime — invocation, state, tools — and 1000 kept requests per
 * model held a worker's heap growing for most of an hour of the soak).
 */
function copyRequest(request: ModelRequest): ModelRequest {
  const { signal: _signal, ...data } = request;
  return structuredClone(data);
}

function isContent(reply: ModelReply): reply is Content {
  return typeof reply === 'object' && 'parts' in reply && Array.isArray(reply.parts);
}

/** Converts a scripted reply to a model content, giving function calls without id a fresh one. */
function toContent(reply: ModelReply): Content {
  if (typeof reply === 'string') return { role: 'model', parts: [{ text: reply }] };
  if (isContent(reply)) {
    const parts = structuredClone(reply.parts).map((p): Part => {
      if (p.functionCall && p.functionCall.id === undefined) {
        return { ...p, functionCall: { ...p.functionCall, id: newId('call') } };
      }
      return p;
    });
    return { role: 'model', parts };
  }
  const parts: Part[] = [];
  if (reply.text !== undefined) parts.push({ text: reply.text });
  for (const call of reply.functionCalls ?? []) {
    parts.push({
      functionCall: {
        id: call.id ?? newId('call'),
        name: call.name,
        args: structuredClone(call.args ?? {}),
      },
    });
  }
  return { role: 'model', parts };
}
