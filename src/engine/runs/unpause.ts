/** Waking paused nodes' ancestors when an answer resumes a node (shared by every kind of answer). */
import { isLeafKind } from '../../agents/workflow/workflow.js';
import type { Db } from '../../store/db/database.js';
import { getNode, updateNodeTx } from '../../store/repos/nodes.js';

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
