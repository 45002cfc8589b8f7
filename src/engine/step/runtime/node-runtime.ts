/**
 * The engine's implementation of NodeRuntime for one claimed attempt of a leaf node. Every write is fenced:
 * it locks the node row and proceeds only if the attempt is still ours and the node still running.
 */
import {
  NodeSuspended,
  type EmitOptions,
  type NodeRuntime,
  type SuspendChild,
} from '../../../agents/context.js';
import { SETTLED, type NodeStatus } from '../../../agents/workflow/workflow.js';
import { AgentloomError, type StoredError } from '../../../core/errors.js';
import type { Content } from '../../../core/content.js';
import type { Event, NewEvent } from '../../../core/event.js';
import { newId } from '../../../core/ids.js';
import type { ReplayInterposer } from './replay-interposer.js';
import type { Model, ModelRequest } from '../../../models/model.js';
import { appendModelEvent, checkModelCall, modelCallSpend, type SpendDeps } from './budget-gate.js';
import type { ModelRateLimiter } from '../../../queue/model-rate-limiter.js';
import { ModelSlots } from './model-slots.js';
import type { Db } from '../../../store/db/database.js';
import type { Store } from '../../../store/store.js';
import {
  appendEvent,
  appendPlainPrepared,
  prepareEvent,
  type AppendEventInput,
  type PreparedEvent,
} from '../../../store/repos/events.js';
import { getNode, type NodeRow } from '../../../store/repos/nodes.js';
import { loadArtifact, saveArtifactTx } from '../../../store/repos/tool-requests.js';
import { askDuringCall, withdrawnAnswer, type ElicitingCall } from '../../auth/elicitation.js';
import { runCredentials, type CredentialVault } from '../../auth/credential-vault.js';
import { applyToState } from '../../../store/repos/state.js';
import { liveModel, liveTool, type LiveRefs } from './live-refs.js';
import type { Logger } from 'pino';
import type { ChildOutcome, ElicitationAnswer, ElicitationRequest, Tool } from '../../../tools/tool.js';
import type { Toolset } from '../../../tools/toolset.js';
import { stopped, type LeaseGuard } from './lease-guard.js';
import type { RunHooks } from '../../observe/run-hooks.js';
import type { PluginManager } from '../../../plugins/plugin-manager.js';

/** What the runtime needs from the engine (SpendDeps: the apps, prices, spends' reports). */
export interface NodeRuntimeDeps extends SpendDeps, LiveRefs {
  store: Store;
  fault: (point: string, info: { invocationId: string; path: string; attempt: number }) => Promise<void>;
  /** Receives partial (streamed, never stored) events. */
  partials: (event: Event) => void;
  /** Where toolsets log (their servers' stderr, lost connections). */
  logger?: Logger;
  /** Users' tool credentials (absent when the deployment has no AGENTLOOM_SECRET_KEY). */
  vault?: CredentialVault;
  /** The shared model rate limits (`createEngine({ rateLimits })`), when any. */
  rateLimiter?: ModelRateLimiter;
  /** The after-commit hooks and the plugins (absent: none). */
  runHooks?: RunHooks;
}

/** The invocation a node belongs to (the fields a step needs). */
export interface InvocationInfo {
  id: string;
  app: string;
  sessionId: string;
  userId: string;
  /** The root agent's name (what plugins' run callbacks are told). */
  rootAgent?: string;
  /** How the invocation was forked (engine.fork): its `instruction` overrides, by agent name. */
  fork?: Record<string, unknown> | null;
  /** The run's budget as stored when the step was claimed (null: none; see engine/step/runtime/budget-gate.ts). */
  budget?: Record<string, unknown> | null;
}

/**
 * How long a deferred event (see {@link EngineNodeRuntime.emitDeferred}) may wait for its step's next write before
 * it is stored on its own: followers see a long step's progress within this, and a step that ends sooner commits
 * its last event with its completion.
 */
export const DEFERRED_EVENT_MS = 10;

/** NodeRuntime over the store, for one attempt. */
export class EngineNodeRuntime implements NodeRuntime {
  readonly invocationId: string;
  readonly app: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly nodePath: string;
  readonly branch: string | undefined;
  readonly journal: readonly Event[];
  readonly withdrawnCalls: ReadonlySet<string>;
  endRequested = false;
  readonly slots = new ModelSlots(); // rate-limit slots of its model calls; the step releases those left open
  private history: Event[] | undefined;
  /** Events this step appended, in order (the history loaded later must include them too). */
  private readonly appended: Event[] = [];
  private currentState: Record<string, unknown>;

  constructor(
    private readonly deps: NodeRuntimeDeps,
    private readonly invocation: InvocationInfo,
    private readonly node: NodeRow,
    journal: Event[] | { events: Event[]; withdrawnCalls: ReadonlySet<string> },
    state: Record<string, unknown>,
    readonly signal: AbortSignal,
    private readonly lease?: LeaseGuard,
  ) {
    this.invocationId = invocation.id;
    this.app = invocation.app;
    this.sessionId = invocation.sessionId;
    this.userId = invocation.userId;
    this.nodePath = node.path;
    this.branch = node.branch ?? undefined;
    this.journal = Array.isArray(journal) ? journal : journal.events;
    this.withdrawnCalls = Array.isArray(journal) ? new Set() : journal.withdrawnCalls;
    this.currentState = state;
  }

  async sessionEvents(): Promise<readonly Event[]> {
    await this.flush();
    if (!this.history) {
      const loaded = await this.deps.store.sessionHistory(this.sessionId);
      const seen = new Set(loaded.map((e) => e.seq));
      this.history = [...loaded, ...this.appended.filter((e) => !seen.has(e.seq))];
    }
    return this.history;
  }

  state(): Record<string, unknown> {
    return this.currentState;
  }

  get plugins(): PluginManager | undefined {
    return this.deps.runHooks?.plugins;
  }

  /** After an event's commit: the plugins' onEventCallback (a throw fails the step: PLUGIN_ERROR). */
  private async stored(event: Event): Promise<void> {
    await this.deps.runHooks?.eventsStored(this.invocation, [event]);
  }

  instructionOverride(agentName: string): string | undefined {
    const overrides = this.invocation.fork?.instruction as Record<string, unknown> | undefined;
    const text = overrides?.[agentName];
    return typeof text === 'string' ? text : undefined;
  }

  private async fenced<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return this.deps.store.transaction(async (tx) => {
      const row = await getNode(tx, this.invocationId, this.nodePath, true);
      if (!row || row.attempt !== this.node.attempt || row.status !== 'running') {
        throw new AgentloomError(
          'FENCED',
          `node ${this.nodePath} attempt ${this.node.attempt} was superseded (now ${row?.status ?? 'gone'})`,
        );
      }
      return work(tx);
    });
  }

  private appendInput(event: NewEvent): AppendEventInput {
    return {
      sessionId: this.sessionId,
      invocationId: this.invocationId,
      nodePath: this.nodePath,
      branch: this.branch,
      event,
      fence: { path: this.nodePath, attempt: this.node.attempt },
    };
  }

  /** This attempt's fencing token. */
  get fence(): { path: string; attempt: number } {
    return { path: this.nodePath, attempt: this.node.attempt };
  }

  async emit(event: NewEvent, options: EmitOptions = {}): Promise<Event> {
    if (this.signal.aborted) throw new AgentloomError('CANCELLED', 'the invocation was cancelled');
    await this.flush();
    const spend = modelCallSpend(this.deps, this.invocation.budget, this.agent(), options);
    // Fenced: stored only while this attempt still owns the running node (one statement in the common case); a
    // model call's spend in the same commit (budget-gate.ts).
    const stored = spend
      ? await appendModelEvent(this.deps, this.appendInput(event), { app: this.app, ...spend })
      : await appendEvent(this.deps.store.db, this.appendInput(event));
    // Our own writes are visible to the rest of this step without a read (others' at the next claim).
    const actions = event.actions ?? {};
    this.currentState = applyToState(
      this.currentState,
      actions.stateDelta ?? {},
      actions.appendToState ?? [],
    );
    this.recordStored(stored);
    await this.stored(stored);
    return stored;
  }

  /** This node's agent in its app's tree (undefined outside a registered app). */
  private agent() {
    return this.deps.apps?.get(this.app)?.agents.get(this.node.agent);
  }

  private recordStored(stored: Event): void {
    this.appended.push(stored);
    this.history?.push(stored);
  }

  /**
   * A custom agent's event (see BaseAgent.runImpl). One that changes state is stored now, as {@link emit} does.
   * Any other is validated now and stored before this step's next write of any kind, before its next model call,
   * tool call, child or history read, or {@link DEFERRED_EVENT_MS} from now, whichever comes first — so when the
   * step ends sooner, the event commits in the same statement as the step's completion (one commit for both).
   */
  async emitDeferred(event: NewEvent): Promise<void> {
    if (this.signal.aborted) throw new AgentloomError('CANCELLED', 'the invocation was cancelled');
    await this.flush();
    const prepared = prepareEvent(this.appendInput(event));
    // Stored at once when plugins watch events: onEventCallback follows each commit, and a deferred event would
    // commit with the step's completion, out of the runtime's sight.
    if (prepared.changesState || this.deps.runHooks?.handlesEvents) {
      await this.emit(event);
      return;
    }
    const timer = setTimeout(() => {
      // A failure here (superseded, database down) surfaces at the step's next flush or at its completion.
      this.flush().catch(() => undefined);
    }, DEFERRED_EVENT_MS);
    this.deferred = { prepared, timer };
  }

  /** The deferred event, not stored yet (see {@link emitDeferred}). */
  private deferred: { prepared: PreparedEvent; timer: NodeJS.Timeout } | undefined;
  /** The flush in flight, if any (flushes run one at a time, in order). */
  private flushing: Promise<void> = Promise.resolve();

  /** Stores the deferred event, if any (fenced). */
  flush(): Promise<void> {
    const run = this.flushing.then(async () => {
      const deferred = this.deferred;
      if (!deferred) return;
      clearTimeout(deferred.timer);
      this.deferred = undefined;
      let stored: Event;
      try {
        stored = await appendPlainPrepared(this.deps.store.db, deferred.prepared, this.fence);
      } catch (err) {
        // Not stored: it is still this step's to store (by the next flush or with the completion).
        this.deferred ??= deferred;
        throw err;
      }
      this.recordStored(stored);
    });
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /**
   * For the step's completion: the deferred event not stored yet (after any flush in flight), which the caller
   * must store with the completion, under this attempt's fence. The runtime forgets it.
   */
  async takeDeferred(): Promise<PreparedEvent | undefined> {
    // Every flush started so far has ended (a timer may start one while we wait).
    for (let seen = this.flushing; ; seen = this.flushing) {
      await seen;
      if (seen === this.flushing) break;
    }
    const deferred = this.deferred;
    if (!deferred) return undefined;
    clearTimeout(deferred.timer);
    this.deferred = undefined;
    return deferred.prepared;
  }

  /** Drops the deferred event (the attempt stopped without committing: it was never stored). */
  discardDeferred(): void {
    if (this.deferred) clearTimeout(this.deferred.timer);
    this.deferred = undefined;
  }

  async checkLease(): Promise<void> {
    if (this.signal.aborted) throw new AgentloomError('CANCELLED', 'the step was stopped');
    await this.flush();
    await this.lease?.ensure(this.nodePath, this.node.attempt);
  }

  async sendLeased<T>(send: () => Promise<T>): Promise<T> {
    await this.flush();
    if (!this.lease) {
      if (this.signal.aborted) throw stopped(this.signal);
      return send();
    }
    return this.lease.send(this.nodePath, this.node.attempt, this.signal, send);
  }

  async acquireModelSlot(request: ModelRequest, ref: Model | string | undefined) {
    // A replay calls no model: no limit. A step that gives back its worker leaves nothing unstored.
    if (!this.deps.rateLimiter || this.replay) return undefined;
    await this.flush();
    return this.slots.acquire(this.deps.rateLimiter, request, ref, this.app);
  }

  async checkBudget(request: ModelRequest): Promise<number | undefined> {
    await this.flush();
    const { invocationId, invocation } = this;
    const call = { invocationId, budget: invocation.budget, agent: this.agent(), agentName: this.node.agent };
    return checkModelCall(this.deps, { ...call, request });
  }

  /** Set in a replay run (engine.replay): models and tools answer from the recorded run. */
  replay: ReplayInterposer | undefined;

  resolveModel(ref: Model | string | undefined): Model {
    return this.replay ? this.replay.model() : liveModel(this.deps, ref);
  }

  resolveTool(ref: Tool | string): Tool {
    const tool = liveTool(this.deps, ref);
    return this.replay ? this.replay.tool(tool, this.node.agent) : tool;
  }

  async resolveToolset(toolset: Toolset): Promise<Tool[]> {
    const tools = await toolset.tools({ logger: this.deps.logger, signal: this.signal });
    const replay = this.replay;
    if (replay) return tools.map((tool) => replay.tool(tool, this.node.agent));
    return tools.map((tool) => this.deps.observeTool?.(tool) ?? tool);
  }

  async runChild(agentName: string, options: { segment: string; branch?: string }): Promise<ChildOutcome> {
    await this.flush();
    const path = `${this.nodePath}/${options.segment}`;
    const row = await getNode(this.deps.store.db, this.invocationId, path);
    if (row && SETTLED.has(row.status as NodeStatus)) {
      return {
        status: row.status as ChildOutcome['status'],
        escalated: row.escalated,
        output: row.output ?? undefined,
        error: (row.error as StoredError | null) ?? undefined,
      };
    }
    const children: SuspendChild[] = row
      ? []
      : [{ agent: agentName, path, branch: options.branch ?? this.branch }];
    throw new NodeSuspended(children);
  }

  endInvocation(): void {
    this.endRequested = true;
  }

  loadArtifact(name: string, version?: number) {
    return loadArtifact(this.deps.store.db, this.sessionId, name, version);
  }

  async saveArtifact(name: string, artifact: { mime: string; data: Uint8Array }): Promise<number> {
    await this.flush();
    return this.fenced((tx) => saveArtifactTx(tx, this.sessionId, name, artifact.mime, artifact.data));
  }

  /** Asks the user for input while a tool call is open (see elicitation.ts). */
  async elicit(call: ElicitingCall, request: ElicitationRequest): Promise<ElicitationAnswer> {
    if (this.signal.aborted) return withdrawnAnswer();
    await this.flush();
    const { store } = this.deps;
    const [appendInput, stored] = [this.appendInput.bind(this), this.recordStored.bind(this)];
    const scope = { store, signal: this.signal, author: this.node.agent, appendInput, stored };
    const where = { invocationId: this.invocationId, nodePath: this.nodePath, branch: this.branch };
    return askDuringCall({ ...scope, ...where }, call, request);
  }

  get credentials() {
    return runCredentials(this.deps.vault, this.deps.store.db, this);
  }

  publishPartial(content: Content): void {
    this.deps.partials({
      id: newId('partial'),
      invocationId: this.invocationId,
      author: this.node.agent,
      nodePath: this.nodePath,
      ...(this.branch ? { branch: this.branch } : {}),
      seq: this.appended.at(-1)?.seq ?? this.journal.at(-1)?.seq ?? 0,
      timestamp: Date.now(),
      content,
      partial: true,
      actions: { stateDelta: {}, artifactDelta: {} },
    });
  }

  async fault(point: string): Promise<void> {
    await this.flush();
    return this.deps.fault(point, {
      invocationId: this.invocationId,
      path: this.nodePath,
      attempt: this.node.attempt,
    });
  }
}
