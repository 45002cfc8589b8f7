/**
 * Branches name the concurrent lines of work inside one invocation (SEMANTICS §2, §4). A branch is a
 * `.`-separated list of forks: `research.0` is lane 0 of the ParallelAgent `research`, `research.0.lookup@call_1`
 * the AgentTool call `call_1` made on that lane. Inside a LoopAgent a ParallelAgent's fork carries the iterations
 * of its node path (`research#2.0`), so every run of a fan-out has a name of its own.
 */
import { AgentloomError } from '../core/errors.js';

/**
 * The branch of a child started on `parentBranch`: `<parentBranch>.<segment>`, or just `segment` when the parent
 * has no branch. Used for ParallelAgent children (`segment` from {@link parallelLane}) and AgentTool children
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

/**
 * The fork of lane `index` of the ParallelAgent `name` whose node is at `path`: `<name>.<index>`, with the loop
 * iterations of the path appended to the name (`stage#1.0` for the node `refine/round#1/stage`). Two runs of one
 * ParallelAgent in one invocation differ in some iteration, so their forks differ too.
 */
export function parallelLane(name: string, path: string, index: number): string {
  const iterations = [...path.matchAll(/#(\d+)/g)].map((m) => `#${m[1]}`).join('');
  return `${name}${iterations}.${index}`;
}

/** One fork of a branch: a lane of a ParallelAgent run, or a single segment (an AgentTool call, a custom name). */
interface Fork {
  /** The fan-out: the ParallelAgent fork name (`stage#1`), or the whole segment. */
  fanOut: string;
  /** The lane index of a ParallelAgent fork. */
  lane?: string;
}

const LANE = /^\d+$/;

/** Splits a branch into its forks; a segment followed by a number is a ParallelAgent fan-out and its lane. */
function forksOf(branch: string): Fork[] {
  const segments = branch.split('.');
  const forks: Fork[] = [];
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as string;
    const next = segments[i + 1];
    if (!segment.includes('@') && next !== undefined && LANE.test(next)) {
      forks.push({ fanOut: segment, lane: next });
      i++;
    } else forks.push({ fanOut: segment });
  }
  return forks;
}

const sameFork = (a: Fork | undefined, b: Fork | undefined): boolean =>
  a !== undefined && b !== undefined && a.fanOut === b.fanOut && a.lane === b.lane;

/**
 * Whether an event stored on `eventBranch` is visible to a reader on `readerBranch`. Visible: events without a
 * branch; every event to a reader without a branch; the reader's branch and its ancestors; and the lanes of a
 * ParallelAgent fan-out that the reader's branch has already passed — one started from the reader's branch or an
 * ancestor of it that is not the fan-out the reader is itself a lane of. Invisible: the sibling lanes of a fan-out
 * the reader is inside (its fan-out is still running), and AgentTool calls the reader is not inside (their result
 * reaches the caller as the tool's response).
 */
export function visibleOnBranch(eventBranch: string | undefined, readerBranch: string | undefined): boolean {
  if (!eventBranch || !readerBranch) return true;
  if (readerBranch === eventBranch || readerBranch.startsWith(`${eventBranch}.`)) return true;
  const event = forksOf(eventBranch);
  const reader = forksOf(readerBranch);
  let common = 0;
  while (sameFork(event[common], reader[common])) common++;
  const fork = event[common];
  if (fork?.lane === undefined) return false;
  const own = reader[common];
  // The reader is a lane of this very fan-out: the event is on a sibling lane, still running. Any other fan-out
  // started from the shared line has ended: a line of work runs its fan-outs one after another.
  return !(own?.lane !== undefined && own.fanOut === fork.fanOut);
}

/** {@link visibleOnBranch} for one reader, remembering each event branch it has decided. */
export function branchVisibility(
  readerBranch: string | undefined,
): (eventBranch: string | undefined) => boolean {
  const decided = new Map<string, boolean>();
  return (eventBranch) => {
    if (!eventBranch || !readerBranch) return true;
    let visible = decided.get(eventBranch);
    if (visible === undefined)
      decided.set(eventBranch, (visible = visibleOnBranch(eventBranch, readerBranch)));
    return visible;
  };
}
