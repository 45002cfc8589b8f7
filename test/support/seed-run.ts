/** Rows for store-level tests of the step statements: a session, one invocation of it, and its nodes. */
import { insertInvocationTx } from '../../src/store/repos/invocations.js';
import { insertNodeTx, updateNodeTx, type NodeRow } from '../../src/store/repos/nodes.js';
import type { InvocationStatus } from '../../src/store/repos/invocations.js';
import type { Store } from '../../src/store/store.js';

/** A node to store: its parent is its path without the last segment; `set` is applied after the insert. */
export interface SeedNode {
  path: string;
  agent: string;
  kind: string;
  branch?: string | null;
  set?: Partial<NodeRow>;
}

/**
 * Stores a new session of `app`, the invocation `id` in it (root agent: the first node's) and `nodes`, in one
 * transaction. Returns the session id.
 */
export async function seedRun(
  store: Store,
  run: {
    id: string;
    app: string;
    status?: InvocationStatus;
    definitionHash?: string;
    nodes: readonly SeedNode[];
  },
): Promise<string> {
  const session = await store.createSession({ app: run.app, userId: 'u' });
  await store.transaction(async (tx) => {
    await insertInvocationTx(tx, {
      id: run.id,
      app: run.app,
      sessionId: session.id,
      userId: 'u',
      rootAgent: run.nodes[0]?.agent ?? run.app,
      definitionHash: run.definitionHash ?? 'h',
      status: run.status ?? 'running',
      maxLlmCalls: 10,
    });
    for (const node of run.nodes) {
      const slash = node.path.lastIndexOf('/');
      await insertNodeTx(tx, {
        invocationId: run.id,
        path: node.path,
        parentPath: slash < 0 ? null : node.path.slice(0, slash),
        agent: node.agent,
        kind: node.kind,
        branch: node.branch ?? null,
      });
      if (node.set) await updateNodeTx(tx, run.id, node.path, node.set);
    }
  });
  return session.id;
}
