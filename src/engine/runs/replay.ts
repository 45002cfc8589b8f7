/**
 * engine.replay (CONTRACT.md): re-executes a recorded run against the current agent code with every model and
 * tool answer taken from the recording, and reports the first divergence. The replay is a run of its own — a fork
 * of the original at its root, in a new session, marked `replayOf` — whose leaf steps get their models and tools
 * from engine/step/runtime/replay-interposer.ts (no call leaves the process); the original is untouched, and the replay
 * stays inspectable (`agentloom diff ORIGINAL REPLAY`). What is compared: each model call (it must exist in the
 * recording at that node path, with the same request digest: instruction and tool declarations), each tool call
 * (name and arguments), then the leaf nodes that ran (order and iteration counts show here) and the output.
 */
import { isLeafKind } from '../../agents/workflow/workflow.js';
import { AgentloomError, type StoredError } from '../../core/errors.js';
import { getInvocation, TERMINAL_INVOCATION } from '../../store/repos/invocations.js';
import { invocationNodes, type NodeRow } from '../../store/repos/nodes.js';
import { forkInvocation, type ForkContext } from './fork.js';
import type { InvocationView } from './views.js';

/** What a replay found. */
export type ReplayResult = { replayId: string } & (
  | { diverged: false }
  | { diverged: true; nodePath: string; expected: unknown; actual: unknown; message: string }
);

/** Options of `engine.replay`. */
export interface ReplayOptions {
  /**
   * `'current'` (default): replay on the app's current definition, the point of a replay. `'recorded'`: refuse
   * when the definition changed since the run (DEFINITION_MISMATCH).
   */
  definition?: 'current' | 'recorded';
  /** How long to wait for the replay run (ms). Default 120000. */
  timeoutMs?: number;
}

/** What a replay needs of its engine. */
export interface ReplayContext extends ForkContext {
  wait: (invocationId: string, timeoutMs: number) => Promise<InvocationView>;
}

const leavesOf = (nodes: NodeRow[]): string[] =>
  nodes
    .filter((n) => isLeafKind(n.kind))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.path.localeCompare(b.path))
    .map((n) => n.path);

/** Replays `invocationId`; resolves with the first divergence, if any. */
export async function replayInvocation(
  ctx: ReplayContext,
  invocationId: string,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const inv = await getInvocation(ctx.store.db, invocationId);
  if (!inv) {
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  }
  if (!TERMINAL_INVOCATION.has(inv.status) || inv.status === 'cancelled') {
    throw new AgentloomError(
      'CONFLICT',
      `only completed or failed runs can be replayed; ${invocationId} is ${inv.status}`,
      { details: { invocationId } },
    );
  }
  const { invocationId: replayId } = await forkInvocation(
    ctx,
    invocationId,
    { at: inv.rootAgent, definition: options.definition ?? 'current' },
    { replayOf: invocationId, replaySession: inv.sessionId },
  );
  const replayed = await ctx.wait(replayId, options.timeoutMs ?? 120_000);
  const error = replayed.error as StoredError | null;
  if (error?.code === 'REPLAY_DIVERGED') {
    const details = (error.details ?? {}) as { nodePath?: string; expected?: unknown; actual?: unknown };
    return {
      replayId,
      diverged: true,
      nodePath: details.nodePath ?? inv.rootAgent,
      expected: details.expected ?? null,
      actual: details.actual ?? null,
      message: error.message,
    };
  }
  const [was, now] = [
    leavesOf(await invocationNodes(ctx.store.db, invocationId)),
    leavesOf(await invocationNodes(ctx.store.db, replayId)),
  ];
  const missing = was.find((path) => !now.includes(path));
  const extra = now.find((path) => !was.includes(path));
  const first = [missing, extra]
    .filter((p): p is string => p !== undefined)
    .sort(
      (a, b) => (was.indexOf(a) + 1 || now.indexOf(a) + 1) - (was.indexOf(b) + 1 || now.indexOf(b) + 1),
    )[0];
  if (first !== undefined) {
    const ran = (list: string[]) => (list.includes(first) ? 'ran' : 'did not run');
    return {
      replayId,
      diverged: true,
      nodePath: first,
      expected: ran(was),
      actual: ran(now),
      message: `replay diverged at ${first}: it ${ran(was)} in the recorded run and ${ran(now)} in the replay`,
    };
  }
  if (replayed.status !== inv.status || replayed.output !== inv.output) {
    return {
      replayId,
      diverged: true,
      nodePath: inv.rootAgent,
      expected: { status: inv.status, output: inv.output },
      actual: { status: replayed.status, output: replayed.output, error },
      message: `replay diverged at ${inv.rootAgent}: the run ended otherwise`,
    };
  }
  return { replayId, diverged: false };
}
