/**
 * `agentloom status ID` read straight from the database: what an operator of workers sees without an API — the
 * invocation, the definition hash a worker must serve to run it, its node tree and its pending calls.
 */
import { pino } from 'pino';
import { createEngine } from '../engine/create-engine.js';
import type { InvocationView, NodeView } from '../engine/views.js';

/** Renders an invocation and its nodes as the lines `status` prints. */
export function formatStatus(view: InvocationView, nodes: NodeView[]): string[] {
  const lines = [
    `invocation ${view.id}  app ${view.app}  status ${view.status}`,
    `definition ${view.definitionHash}  (run only by workers serving this definition of "${view.app}")`,
    `model calls ${view.llmCalls}/${view.maxLlmCalls}`,
  ];
  if (view.error) lines.push(`error ${view.error.code}: ${view.error.message}`);
  if (view.output !== null && view.status === 'completed') lines.push(`output ${view.output}`);
  lines.push('nodes');
  // Depth first from the root, siblings in the order they were created (engine.nodes order).
  const parentOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf('/')));
  const visit = (parent: string, depth: number): void => {
    for (const node of nodes.filter((n) => parentOf(n.path) === parent)) {
      const iteration =
        typeof node.checkpoint.iteration === 'number' ? `  iteration ${node.checkpoint.iteration}` : '';
      const attempt = node.attempt > 0 ? `  attempt ${node.attempt}` : '';
      const name = node.path.slice(parent ? parent.length + 1 : 0);
      lines.push(`${'  '.repeat(depth)}${name}  ${node.kind}  ${node.status}${iteration}${attempt}`);
      visit(node.path, depth + 1);
    }
  };
  visit('', 1);
  for (const call of view.pending) {
    lines.push(
      `pending ${call.kind} ${call.callId}: ${call.name}(${JSON.stringify(call.args)}) at ${call.nodePath}`,
    );
  }
  return lines;
}

/** Prints the status of one invocation from the database at `url`. */
export async function printStatus(url: string, invocationId: string): Promise<InvocationView> {
  const engine = await createEngine({
    apps: [],
    database: url,
    queue: 'local',
    worker: false,
    logger: pino({ level: 'silent' }),
  });
  try {
    const view = await engine.get(invocationId);
    for (const line of formatStatus(view, await engine.nodes(invocationId))) console.log(line);
    return view;
  } finally {
    await engine.close();
  }
}
