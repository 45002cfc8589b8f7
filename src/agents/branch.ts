/**
 * Branches name the concurrent lines of work inside one invocation (SEMANTICS §2, §4). A branch is a
 * `.`-separated path of segments: `research.0` for the first child of the ParallelAgent `research`,
 * `research.0.lookup@call_1` for an AgentTool child started by function call `call_1` on that branch.
 */
import { AgentloomError } from '../core/errors.js';

/**
 * The branch of a child started on `parentBranch`: `<parentBranch>.<segment>`, or just `segment` when the parent
 * has no branch. Used for ParallelAgent children (`segment` = `<parallel name>.<index>`) and AgentTool children
 * (`segment` = `<agent name>@<function call id>`).
 *
 * @throws AgentloomError `INTERNAL` when `segment` is empty: it would make `a.` an ancestor of nothing.
 */
export function childBranch(parentBranch: string | undefined, segment: string): string {
  if (segment === '') {
    throw new AgentloomError('INTERNAL', 'childBranch: the branch segment must not be empty', {
      details: { parentBranch },
    });
  }
  return parentBranch === undefined || parentBranch === '' ? segment : `${parentBranch}.${segment}`;
}
