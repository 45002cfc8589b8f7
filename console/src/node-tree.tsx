/**
 * An invocation's tree as the engine sees it: each node's status and attempt, a sequence's progress, a loop's
 * iterations, a parallel's branches, who holds a running node's lease; agents of the app that have not started yet
 * are listed as such, so the tree also says what comes next.
 */
import { StatusBadge } from './status-badge';
import { ago, when } from './format';
import type { AppList, RunNode } from './types';

type AgentDef = AppList['apps'][number]['root'];

/** A node's agent name in its path segment: `drafter#1` is iteration 1 of `drafter`. */
function segment(path: string): { name: string; iteration: number | undefined } {
  const last = path.slice(path.lastIndexOf('/') + 1);
  const hash = last.lastIndexOf('#');
  return hash < 0
    ? { name: last, iteration: undefined }
    : { name: last.slice(0, hash), iteration: Number(last.slice(hash + 1)) };
}

function progress(node: RunNode, def: AgentDef | undefined): string | undefined {
  const cp = node.checkpoint;
  const children = def?.children.length;
  if (node.kind === 'sequential') {
    const done = Number(cp.completedSubAgents ?? 0);
    return `${done} of ${children ?? '?'} steps done`;
  }
  if (node.kind === 'loop') {
    const iteration = Number(cp.iteration ?? 0) + 1;
    const exited = typeof cp.exitedBy === 'string' ? `, ended by ${cp.exitedBy}` : '';
    return `iteration ${iteration}${exited}`;
  }
  if (node.kind === 'parallel' && cp.children && typeof cp.children === 'object') {
    const statuses = Object.values(cp.children as Record<string, string>);
    const done = statuses.filter((s) => s === 'completed').length;
    return `${done} of ${children ?? statuses.length} branches done`;
  }
  return undefined;
}

interface TreeProps {
  node: RunNode;
  def: AgentDef | undefined;
  byParent: Map<string, RunNode[]>;
  now: number;
  /** Offers "Fork from here" on each node (an ended run). */
  onFork?: ((path: string) => void) | undefined;
}

function NodeItem({ node, def, byParent, now, onFork }: TreeProps) {
  const children = byParent.get(node.path) ?? [];
  const started = new Set(children.map((c) => segment(c.path).name));
  const notStarted = node.kind === 'loop' ? [] : (def?.children ?? []).filter((c) => !started.has(c.name));
  const note = progress(node, def);
  let lastIteration: number | undefined;
  return (
    <li class={`node node-${node.status}`} data-path={node.path}>
      <div class="node-line">
        <strong class="agent">{node.agent}</strong> <span class="kind">{node.kind}</span>{' '}
        <StatusBadge status={node.status} />
        {node.branch && <span class="branch">branch {node.branch}</span>}
        {note && <span class="progress">{note}</span>}
        {node.attempt > 1 && <span class="attempt">attempt {node.attempt}</span>}
        {node.escalated && <span class="flag">escalated</span>}
        {onFork && (
          <button
            type="button"
            class="fork-here"
            aria-label={`Fork from ${node.path}`}
            onClick={() => onFork(node.path)}
          >
            Fork from here
          </button>
        )}
        {node.waiting && node.status === 'running' && Date.parse(node.waiting.until) > now && (
          <span
            class="waiting"
            title={`limit ${node.waiting.limit}; runs again at ${when(node.waiting.until)}`}
          >
            waiting for rate limit: {node.waiting.model}, ~
            {Math.max(1, Math.round((Date.parse(node.waiting.until) - now) / 1000))} s
          </span>
        )}
        {node.lease && node.status === 'running' && !node.waiting && (
          <span class="lease" title={`lease until ${when(node.lease.expiresAt)}`}>
            on {node.lease.owner}
            {Date.parse(node.lease.expiresAt) < now
              ? ` (lease lapsed ${ago(node.lease.expiresAt, now)})`
              : ''}
          </span>
        )}
      </div>
      {node.error && (
        <p class="error">
          <strong>{node.error.code}</strong>: {node.error.message}
        </p>
      )}
      {(children.length > 0 || notStarted.length > 0) && (
        <ul>
          {children.map((child) => {
            const { name, iteration } = segment(child.path);
            const header =
              node.kind === 'loop' && iteration !== undefined && iteration !== lastIteration ? (
                <li class="iteration" key={`it-${iteration}`}>
                  iteration {iteration + 1}
                </li>
              ) : null;
            lastIteration = iteration;
            return [
              header,
              <NodeItem
                key={child.path}
                node={child}
                def={def?.children.find((c) => c.name === name)}
                byParent={byParent}
                now={now}
                onFork={onFork}
              />,
            ];
          })}
          {notStarted.map((c) => (
            <li key={`ns-${c.name}`} class="node node-not-started">
              <div class="node-line">
                <strong class="agent">{c.name}</strong> <span class="kind">{c.kind}</span>{' '}
                <span class="status status-not-started">not started</span>
              </div>
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

/** Orders a loop's children by iteration, then by their place in the loop. */
function ordered(nodes: RunNode[], def: AgentDef | undefined): RunNode[] {
  const place = (n: RunNode) => def?.children.findIndex((c) => c.name === segment(n.path).name) ?? 0;
  return [...nodes].sort((a, b) => {
    const ia = segment(a.path).iteration ?? 0;
    const ib = segment(b.path).iteration ?? 0;
    return ia - ib || place(a) - place(b) || a.path.localeCompare(b.path);
  });
}

export function NodeTree({
  nodes,
  root,
  now,
  onFork,
}: {
  nodes: RunNode[];
  root: AgentDef | undefined;
  now: number;
  onFork?: ((path: string) => void) | undefined;
}) {
  const byParent = new Map<string, RunNode[]>();
  const defs = new Map<string, AgentDef | undefined>();
  const rootNode = nodes.find((n) => n.parentPath === null);
  if (!rootNode) return <p class="empty">No node has started yet.</p>;
  // The definition of each node, found by walking the app's tree along the path.
  const defOf = (node: RunNode): AgentDef | undefined => {
    if (defs.has(node.path)) return defs.get(node.path);
    let def: AgentDef | undefined;
    if (node.parentPath === null) def = root?.name === node.agent ? root : undefined;
    else {
      const parent = nodes.find((n) => n.path === node.parentPath);
      def = parent ? defOf(parent)?.children.find((c) => c.name === node.agent) : undefined;
    }
    defs.set(node.path, def);
    return def;
  };
  for (const node of nodes) {
    if (node.parentPath === null) continue;
    const siblings = byParent.get(node.parentPath) ?? [];
    siblings.push(node);
    byParent.set(node.parentPath, siblings);
  }
  for (const [parent, children] of byParent) {
    const parentNode = nodes.find((n) => n.path === parent);
    byParent.set(parent, ordered(children, parentNode ? defOf(parentNode) : undefined));
  }
  return (
    <ul class="tree" aria-label="Node tree">
      <NodeItem node={rootNode} def={defOf(rootNode)} byParent={byParent} now={now} onFork={onFork} />
    </ul>
  );
}
