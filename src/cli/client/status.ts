/**
 * `agentloom status ID` through the HTTP API (so it works against `dev` and `api` alike): the invocation, the
 * definition hash a worker must serve to run it, its node tree (status, loop iteration, attempt) and its pending
 * calls with the command lines that answer them.
 */
import type { InvocationJson } from '../../api/http/schemas.js';
import type { ApiClient, NodeJson } from './api-client.js';
import { answerLines, type HintOptions } from './pending.js';

/** The invocation fields `status` shows. */
export type StatusView = Pick<
  InvocationJson,
  'id' | 'app' | 'status' | 'definitionHash' | 'llmCalls' | 'maxLlmCalls' | 'error' | 'output' | 'pending'
> &
  Partial<Pick<InvocationJson, 'spent' | 'budget'>>;

/** The node tree, depth first from the root, siblings in the order the API lists them (creation order). */
function treeLines(nodes: NodeJson[]): string[] {
  const lines: string[] = [];
  const parentOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf('/')));
  const visit = (parent: string, depth: number): void => {
    for (const node of nodes.filter((n) => parentOf(n.path) === parent)) {
      const iteration =
        typeof node.checkpoint.iteration === 'number' ? `  iteration ${node.checkpoint.iteration}` : '';
      const attempt = node.attempt > 0 ? `  attempt ${node.attempt}` : '';
      const name = node.path.slice(parent ? parent.length + 1 : 0);
      const waiting = node.waiting
        ? `  waiting for rate limit: ${node.waiting.model}, ~${Math.max(1, Math.round((Date.parse(node.waiting.until) - Date.now()) / 1000))} s`
        : '';
      lines.push(
        `${'  '.repeat(depth)}${name}  ${node.kind}  ${node.status}${iteration}${attempt}${waiting}`,
      );
      visit(node.path, depth + 1);
    }
  };
  visit('', 1);
  return lines;
}

/** Renders an invocation and its nodes as the lines `status` prints. */
export function formatStatus(view: StatusView, nodes: NodeJson[], hints?: HintOptions): string[] {
  const lines = [
    `invocation ${view.id}  app ${view.app}  status ${view.status}`,
    `definition ${view.definitionHash}  (run only by workers serving this definition of "${view.app}")`,
    `model calls ${view.llmCalls}/${view.maxLlmCalls}`,
  ];
  if (view.spent && view.spent.modelCalls > 0) {
    const { tokens, costUsd } = view.spent;
    const limit = view.budget ? `  budget ${JSON.stringify(view.budget)}` : '';
    lines.push(`spent ${tokens} tokens  $${costUsd.toFixed(4)}${limit}`);
    for (const [agent, s] of Object.entries(view.spent.byAgent)) {
      lines.push(`  ${agent}: ${s.tokens} tokens  $${s.costUsd.toFixed(4)}  ${s.modelCalls} calls`);
    }
  }
  if (view.error) lines.push(`error ${view.error.code}: ${view.error.message}`);
  if (view.output !== null && view.status === 'completed') lines.push(`output ${view.output}`);
  lines.push('nodes', ...treeLines(nodes));
  for (const call of view.pending) {
    lines.push(
      `pending ${call.kind} ${call.callId}: ${call.name}(${JSON.stringify(call.args)}) at ${call.nodePath}`,
    );
    if (hints) lines.push(...answerLines(view.id, call, hints));
  }
  return lines;
}

/** Prints the status of one invocation as the API reports it; returns the invocation. */
export async function printStatus(client: ApiClient, invocationId: string): Promise<InvocationJson> {
  // Both requests at once; the invocation's failure (e.g. NOT_FOUND) is the one reported.
  const pendingNodes = client.nodes(invocationId);
  pendingNodes.catch(() => undefined);
  const view = await client.invocation(invocationId);
  const nodes = await pendingNodes;
  for (const line of formatStatus(view, nodes, { url: client.config.url })) console.log(line);
  return view;
}
