/**
 * RemoteA2aAgent (ADK's): an agent served elsewhere over A2A, as one durable leaf of a workflow. See remote-run.ts
 * for how an activation talks to it and survives a crash without sending its message twice.
 */
import { AgentloomError } from '../../core/errors.js';
import { BaseAgent, type AgentKind } from '../base-agent.js';
import type { LeafOutcome, NodeRuntime } from '../context.js';
import type { Event } from '../../core/event.js';
import { connectA2a, isNotCancelable, type A2aConnection, type AgentCardSource } from './a2a-connection.js';
import { markerOf } from './remote-journal.js';
import { runRemote, type RemoteRunAgent } from './remote-run.js';

/** Options of {@link RemoteA2aAgent}. */
export interface RemoteA2aAgentOptions {
  /** A JS identifier, unique in the tree. */
  name: string;
  /**
   * The remote agent's card: its URL (ending in `.json`: the card itself; otherwise the agent's base URL, the card
   * at `/.well-known/agent-card.json` under it), or the card (A2A v1.0 or v0.3 JSON).
   */
  agentCard: AgentCardSource;
  /** Default: the card's description. */
  description?: string;
  /** HTTP headers sent with every request to the remote (its card included), e.g. `authorization`. */
  headers?: Record<string, string>;
  /**
   * Longest an activation waits for the remote task to end (ms); then the task is cancelled and the node fails
   * with TIMEOUT. Default: none (the step's `maxStepMs` bounds it).
   */
  timeoutMs?: number;
  /** Session state key that receives the remote's answer (its final artifacts' text). */
  outputKey?: string;
  /**
   * `'idempotent'` (default): after a crash between the send and the stored task id, the message is sent again
   * under the same message id (an agentloom remote answers with the same task; other remotes may start a second
   * one). `'unsafe'`: that crash pauses the run with an in-doubt call (rerun, skip with a result, or fail) instead.
   */
  sideEffects?: 'idempotent' | 'unsafe';
  /** See BaseAgentOptions. */
  maxStepMs?: number;
}

/** An agent served by another A2A server: its answer is this node's output. */
export class RemoteA2aAgent extends BaseAgent implements RemoteRunAgent {
  readonly agentCard: AgentCardSource;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number | undefined;
  readonly outputKey: string | undefined;
  readonly sideEffects: 'idempotent' | 'unsafe';
  private connecting: Promise<A2aConnection> | undefined;

  constructor(options: RemoteA2aAgentOptions) {
    super({
      name: options?.name,
      ...(options?.description !== undefined ? { description: options.description } : {}),
      ...(options?.maxStepMs !== undefined ? { maxStepMs: options.maxStepMs } : {}),
    });
    const where = `RemoteA2aAgent "${this.name}"`;
    const card = options.agentCard;
    if (typeof card === 'string') {
      if (!URL.canParse(card) || !/^https?:$/.test(new URL(card).protocol)) {
        throw new AgentloomError(
          'VALIDATION',
          `${where}: agentCard must be an http(s) URL (the agent's base URL or its card's), e.g. http://localhost:8080/a2a/app`,
          { details: { field: 'agentCard' } },
        );
      }
    } else if (typeof card !== 'object' || card === null) {
      throw new AgentloomError('VALIDATION', `${where}: agentCard must be a URL or an agent card object`, {
        details: { field: 'agentCard' },
      });
    }
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
      throw new AgentloomError(
        'VALIDATION',
        `${where}: timeoutMs must be a positive number of milliseconds, e.g. 300000`,
        { details: { field: 'timeoutMs' } },
      );
    }
    const headers = options.headers ?? {};
    if (Object.values(headers).some((value) => typeof value !== 'string')) {
      throw new AgentloomError('VALIDATION', `${where}: every header value must be a string`, {
        details: { field: 'headers' },
      });
    }
    const sideEffects = options.sideEffects ?? 'idempotent';
    if (sideEffects !== 'idempotent' && sideEffects !== 'unsafe') {
      throw new AgentloomError('VALIDATION', `${where}: sideEffects must be 'idempotent' or 'unsafe'`, {
        details: { field: 'sideEffects' },
      });
    }
    this.sideEffects = sideEffects;
    this.agentCard = card;
    this.headers = { ...headers };
    this.timeoutMs = timeoutMs;
    this.outputKey = options.outputKey;
  }

  override get kind(): AgentKind {
    return 'custom';
  }

  /**
   * The structure only (`outputKey`): where the remote lives (its URL, often from the environment, which may differ
   * between an API process and its workers) and the headers (secrets) stay out of the definition hash.
   */
  override definition(): Record<string, unknown> {
    return { ...super.definition(), remote: true, outputKey: this.outputKey ?? null };
  }

  /** The remote's card and SDK client: fetched on first use and kept; a failed fetch is tried again next time. */
  connection(): Promise<A2aConnection> {
    this.connecting ??= connectA2a(this.agentCard, this.headers).catch((err: unknown) => {
      this.connecting = undefined;
      throw err;
    });
    return this.connecting;
  }

  /**
   * Our run was cancelled while this node was unfinished (paused on the remote's question, or running): cancels the
   * remote task it stored, unless it ended. A task the remote no longer lets us cancel (it ended meanwhile) is fine.
   */
  override async stopOutside(journal: readonly Event[]): Promise<void> {
    const markers = journal.flatMap((e) => markerOf(e, this.name) ?? []);
    const task = markers.at(-1)?.remoteTask;
    if (!task || markers.some((m) => m.remoteEnded)) return;
    const { client } = await this.connection();
    await client.cancelTask({ tenant: '', id: task.taskId, metadata: undefined }).catch((err: unknown) => {
      if (!isNotCancelable(err)) throw err;
    });
  }

  override runLeaf(runtime: NodeRuntime): Promise<LeafOutcome> {
    return runRemote(this, runtime);
  }
}
