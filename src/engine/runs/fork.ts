/**
 * engine.fork (CONTRACT.md): a new invocation in a new session whose history up to a node `at` is copied from an
 * original run (events, node rows, checkpoints: no model or tool call) and which runs live from `at`, with a state
 * patch, instruction overrides or a new input applied. The original is untouched; the fork records its origin
 * (`invocations.forked_from`, `fork`). One transaction; the plan is fork-plan.ts.
 */
import { LlmAgent } from '../../agents/llm/llm-agent.js';
import { userText, type Content } from '../../core/content.js';
import { AgentloomError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { appendEventTx, listEvents } from '../../store/repos/events.js';
import { copyEventsTx, insertForkNodesTx, listForks } from '../../store/repos/forks.js';
import { getInvocation, insertInvocationTx } from '../../store/repos/invocations.js';
import { invocationNodes, wakeNodeTx, type NodeJobRef } from '../../store/repos/nodes.js';
import { createSessionTx } from '../../store/repos/sessions.js';
import { assertPlainObject } from '../../store/repos/state.js';
import type { Store } from '../../store/store.js';
import type { RegisteredApp } from '../apps/registry.js';
import type { Db } from '../../store/db/database.js';
import { planFork } from './fork-plan.js';
import { requireInvocation } from './read-views.js';

/** Options of `engine.fork`. */
export interface ForkOptions {
  /** The node path to run again from (a leaf, a loop child `<loop>/<child>#<i>`, a parallel branch, the root). */
  at: string;
  /** A state patch applied when the fork starts (an event by `user` carrying it as its stateDelta). */
  state?: Record<string, unknown>;
  /** Instructions replacing an LlmAgent's own in the fork, by agent name (templates, as `instruction`). */
  instruction?: Record<string, string>;
  /** A new input replacing the original user message. */
  input?: string | Content;
  /**
   * Which definition the fork runs on: `'recorded'` (default) refuses when the app's definition changed since the
   * original ran (its checkpoints were made by another tree); `'current'` forks onto the current one anyway.
   */
  definition?: 'recorded' | 'current';
  createdBy?: string;
}

/** What a fork needs of its engine. */
export interface ForkContext {
  store: Store;
  apps: ReadonlyMap<string, RegisteredApp>;
  wake: (jobs: NodeJobRef[], definition: string) => Promise<void>;
}

function validate(app: RegisteredApp, options: ForkOptions): void {
  if (typeof options?.at !== 'string' || options.at === '') {
    throw new AgentloomError(
      'VALIDATION',
      'at must be the path of a node of the run (e.g. "root/loop/critic#1")',
      {
        details: { field: 'at' },
      },
    );
  }
  if (options.state !== undefined) assertPlainObject(options.state, 'state');
  if (options.instruction !== undefined) {
    assertPlainObject(options.instruction, 'instruction');
    for (const [name, text] of Object.entries(options.instruction)) {
      if (!(app.agents.get(name) instanceof LlmAgent)) {
        const llms = [...app.agents.values()].filter((a) => a instanceof LlmAgent).map((a) => a.name);
        throw new AgentloomError(
          'VALIDATION',
          `instruction: "${name}" is not an LlmAgent of app "${app.name}"; its LlmAgents are: ${llms.join(', ')}`,
          { details: { field: `instruction.${name}` } },
        );
      }
      if (typeof text !== 'string') {
        throw new AgentloomError('VALIDATION', `instruction.${name} must be a string (the new instruction)`, {
          details: { field: `instruction.${name}` },
        });
      }
    }
  }
  if (
    options.definition !== undefined &&
    options.definition !== 'recorded' &&
    options.definition !== 'current'
  ) {
    throw new AgentloomError('VALIDATION', `definition must be 'recorded' or 'current'`, {
      details: { field: 'definition' },
    });
  }
}

function inputContent(input: string | Content): Content {
  const content = typeof input === 'string' ? userText(input) : input;
  if (!content || !Array.isArray(content.parts)) {
    throw new AgentloomError('VALIDATION', 'input must be a string or a Content {role, parts}', {
      details: { field: 'input' },
    });
  }
  return { ...content, role: 'user' };
}

/** Forks `invocationId` at `options.at`; returns the new invocation and session. */
export async function forkInvocation(
  ctx: ForkContext,
  invocationId: string,
  options: ForkOptions,
  /** Recorded with the fork's origin besides the options (replay.ts: which run it replays). */
  extra: Record<string, unknown> = {},
): Promise<{ invocationId: string; sessionId: string }> {
  const inv = await getInvocation(ctx.store.db, invocationId);
  if (!inv) {
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  }
  const app = ctx.apps.get(inv.app);
  if (!app) throw new AgentloomError('NOT_FOUND', `app "${inv.app}" is not served by this engine`);
  validate(app, options);
  if (app.definitionHash !== inv.definitionHash && options.definition !== 'current') {
    throw new AgentloomError(
      'DEFINITION_MISMATCH',
      `app "${inv.app}" changed since invocation ${invocationId} ran; fork it from an engine serving that definition, or pass definition: 'current' (--definition current) to fork onto the current one`,
      { details: { field: 'definition', expected: inv.definitionHash, actual: app.definitionHash } },
    );
  }
  const id = newId('inv');
  const plan = planFork({
    invocationId,
    newInvocationId: id,
    at: options.at,
    nodes: await invocationNodes(ctx.store.db, invocationId),
    events: await listEvents(ctx.store.db, inv.sessionId),
    childIndex: (parent, child) => app.agents.get(parent)?.subAgents.findIndex((a) => a.name === child) ?? -1,
  });
  const input = options.input === undefined ? undefined : inputContent(options.input);
  if (input) {
    const userEvent = plan.events.find((c) => c.invocationId === id && c.event.author === 'user');
    if (userEvent) userEvent.event = { ...userEvent.event, content: input };
  }
  const fork = {
    at: options.at,
    ...(options.state ? { state: options.state } : {}),
    ...(options.instruction ? { instruction: options.instruction } : {}),
    ...(input ? { input } : {}),
    ...extra,
  };
  const result = await ctx.store.transaction(async (tx) => {
    const session = await createSessionTx(tx, { app: inv.app, userId: inv.userId });
    await insertInvocationTx(tx, {
      id,
      app: inv.app,
      sessionId: session.id,
      userId: inv.userId,
      rootAgent: inv.rootAgent,
      definitionHash: app.definitionHash,
      status: 'running',
      input: (input ?? inv.input) as Record<string, unknown> | null,
      llmCalls: plan.llmCalls,
      maxLlmCalls: inv.maxLlmCalls,
      budget: inv.budget,
      createdBy: options.createdBy ?? null,
      forkedFrom: invocationId,
      fork,
    });
    await copyEventsTx(tx, session.id, plan.events);
    await insertForkNodesTx(tx, id, plan.nodes);
    if (options.state && Object.keys(options.state).length > 0) {
      await appendEventTx(tx, {
        sessionId: session.id,
        invocationId: id,
        event: { author: 'user', actions: { stateDelta: options.state, artifactDelta: {} } },
      });
    }
    const job = await wakeNodeTx(tx, id, plan.wake ?? options.at, 'pending');
    return { sessionId: session.id, jobs: job ? [job] : [] };
  });
  await ctx.wake(result.jobs, app.definitionHash);
  return { invocationId: id, sessionId: result.sessionId };
}

/** One fork of a run, as engine.forks lists them. */
export interface ForkListing {
  id: string;
  status: string;
  at: unknown;
  createdAt: Date;
}

/** The forks of an invocation, oldest first (NOT_FOUND when it does not exist). */
export async function forksOf(db: Db, invocationId: string): Promise<ForkListing[]> {
  await requireInvocation(db, invocationId);
  const rows = await listForks(db, invocationId);
  return rows.map((r) => ({ id: r.id, status: r.status, at: r.fork?.at, createdAt: r.createdAt }));
}
