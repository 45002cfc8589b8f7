/** Cancel and retry: state transitions of a whole invocation, each one transaction. */
import { isLeafKind, SETTLED, type NodeStatus } from '../../agents/workflow/workflow.js';
import { AgentloomError } from '../../core/errors.js';
import type { Db } from '../../store/db/database.js';
import { getInvocation, setInvocationStatusTx, TERMINAL_INVOCATION } from '../../store/repos/invocations.js';
import { invocationNodes, updateNodeTx, wakeNodeTx, type NodeJobRef } from '../../store/repos/nodes.js';
import { cancelToolRequestsTx } from '../../store/repos/tool-requests.js';
import type { RunTracing } from '../observe/run-trace.js';

/**
 * Marks the invocation and every unfinished node cancelled (and emits the run's node spans when traced). Returns
 * false when it had already ended.
 */
export async function cancelTx(tx: Db, invocationId: string, tracing?: RunTracing): Promise<boolean> {
  const inv = await getInvocation(tx, invocationId, true);
  if (!inv)
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  if (TERMINAL_INVOCATION.has(inv.status)) return false;
  const nodes = await invocationNodes(tx, invocationId);
  for (const node of nodes) {
    if (!SETTLED.has(node.status as NodeStatus) || node.status === 'paused') {
      await updateNodeTx(tx, invocationId, node.path, {
        status: 'cancelled',
        leaseOwner: null,
        leaseExpiresAt: null,
      });
      // As written: the run's node spans are made from these rows.
      Object.assign(node, { status: 'cancelled', updatedAt: new Date() });
    }
  }
  await cancelToolRequestsTx(tx, invocationId);
  await setInvocationStatusTx(tx, invocationId, 'cancelled');
  await tracing?.runEnded(tx, inv, { status: 'cancelled' }, nodes);
  return true;
}

/**
 * Runs a failed or cancelled invocation again from its checkpoints: failed/cancelled nodes become runnable
 * (leaves re-run from their journal, so completed model and tool calls are not repeated).
 */
export async function retryTx(tx: Db, invocationId: string, maxLlmCalls?: number): Promise<NodeJobRef[]> {
  const inv = await getInvocation(tx, invocationId, true);
  if (!inv)
    throw new AgentloomError('NOT_FOUND', `invocation ${invocationId} does not exist`, {
      details: { invocationId },
    });
  if (inv.status !== 'failed' && inv.status !== 'cancelled') {
    throw new AgentloomError(
      'CONFLICT',
      `only failed or cancelled invocations can be retried; ${invocationId} is ${inv.status}`,
    );
  }
  const nodes = await invocationNodes(tx, invocationId);
  const failed = new Set(
    nodes.filter((n) => n.status === 'failed' || n.status === 'cancelled').map((n) => n.path),
  );
  const jobs: NodeJobRef[] = [];
  for (const node of nodes) {
    if (!failed.has(node.path)) continue;
    const hasFailedChild = nodes.some((c) => c.parentPath === node.path && failed.has(c.path));
    const leaf = isLeafKind(node.kind);
    if (hasFailedChild) {
      await updateNodeTx(tx, invocationId, node.path, { status: leaf ? 'waiting' : 'running', error: null });
    } else {
      await updateNodeTx(tx, invocationId, node.path, { error: null });
      const job = await wakeNodeTx(tx, invocationId, node.path, 'pending');
      if (job) jobs.push(job);
    }
  }
  await setInvocationStatusTx(tx, invocationId, 'running', {
    error: null,
    ...(maxLlmCalls === undefined ? {} : { maxLlmCalls }),
  });
  return jobs;
}
