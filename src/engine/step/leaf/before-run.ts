/**
 * The plugins' beforeRunCallback, at a run's first leaf step. The run is marked asked (`before_run_at`) before the
 * plugins are called, so no other step — a parallel sibling, a successor after a crash — asks again: once per run,
 * at most once across crashes. An answer (content) is stored as the leaf's event, marked, and ends the run with it
 * (ADK's early exit); a successor of a step that stored it finds it in its journal and ends the run the same way.
 */
import type { LeafOutcome } from '../../../agents/context.js';
import { textOf } from '../../../core/content.js';
import type { Event } from '../../../core/event.js';
import { markBeforeRunTx, type InvocationRow } from '../../../store/repos/invocations.js';
import type { EngineNodeRuntime } from '../runtime/node-runtime.js';
import type { StepEnv } from '../env/step-env.js';

/** The `agentState` key of the event that stores a beforeRunCallback answer. */
export const BEFORE_RUN_MARK = 'beforeRun';

/** The leaf's outcome when beforeRunCallback ends the run (now, or at an earlier attempt); undefined otherwise. */
export async function beforeRunOutcome(
  env: StepEnv,
  inv: InvocationRow,
  agentName: string,
  journal: readonly Event[],
  runtime: EngineNodeRuntime,
): Promise<LeafOutcome | undefined> {
  const stored = journal.find((e) => e.actions.agentState?.[BEFORE_RUN_MARK] === true);
  if (stored) {
    runtime.endInvocation();
    return { status: 'completed', output: textOf(stored.content) };
  }
  const hooks = env.deps.runHooks;
  if (inv.beforeRunAt || !hooks?.plugins?.has('beforeRunCallback')) return undefined;
  const first = await markBeforeRunTx(env.deps.store.db, inv.id);
  // A step later in this chain of continuations carries this row: it must not ask again either.
  inv.beforeRunAt = new Date();
  if (!first) return undefined;
  const content = await hooks.beforeRun(inv);
  if (!content) return undefined;
  await runtime.emit({
    author: agentName,
    content: { ...content, role: 'model' },
    actions: { stateDelta: {}, artifactDelta: {}, agentState: { [BEFORE_RUN_MARK]: true } },
  });
  runtime.endInvocation();
  return { status: 'completed', output: textOf(content) };
}
