/** What every kind of answer shares: the answered run locked (not ended), its paused ancestors woken. */
import { isLeafKind } from '../../agents/workflow/workflow.js';
import { AgentloomError } from '../../core/errors.js';
import type { Db } from '../../store/db/database.js';
import { getInvocation, TERMINAL_INVOCATION, type InvocationRow } from '../../store/repos/invocations.js';
import { getNode, updateNodeTx } from '../../store/repos/nodes.js';

/** The answered invocation, locked; CONFLICT when it has ended (an answer after the end changes nothing). */
export async function lockUnendedInvocationTx(tx: Db, invocationId: string): Promise<InvocationRow> {
  const invocation = await getInvocation(tx, invocationId, true);
  if (!invocation || TERMINAL_INVOCATION.has(invocation.status)) {
    throw new AgentloomError(
      'CONFLICT',
      `invocation ${invocationId} has ended (${invocation?.status ?? 'missing'})`,
      { details: { invocationId } },
    );
  }
  return invocation;
}

/** Paused ancestors go back to waiting on their children: workflow nodes `running`, leaves `waiting`. */
export async function unpauseAncestorsTx(
  tx: Db,
  invocationId: string,
  parentPath: string | null,
): Promise<void> {
  for (let path = parentPath; path !== null;) {
    const node = await getNode(tx, invocationId, path, true);
    if (!node) return;
    if (node.status === 'paused') {
      const leaf = isLeafKind(node.kind);
      await updateNodeTx(tx, invocationId, path, { status: leaf ? 'waiting' : 'running' });
    }
    path = node.parentPath;
  }
}
