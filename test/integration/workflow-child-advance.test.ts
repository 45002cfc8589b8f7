/**
 * A new workflow child is inserted already advanced by the statement of the parent's advance that creates it, when
 * its first advance needs nothing but its empty checkpoint (it writes no event and starts only leaves): no
 * statement of its own, no job of its own. Its leaves run and its join happens as usual. On PGlite and PostgreSQL.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { LoopAgent, ParallelAgent, SequentialAgent } from '../../src/index.js';
import { queryRows } from '../../src/store/db/database.js';
import { gate, GatedLeaf } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';

interface Row {
  path: string;
  status: string;
  checkpoint: Record<string, unknown>;
  same: boolean;
}

describe.each(backends)('a workflow child advanced by the statement that creates it ($name)', (backend) => {
  it('is inserted running with its first checkpoint and its leaves, and the run completes', async () => {
    const g = gate();
    const agent = new SequentialAgent({
      name: 'root',
      subAgents: [
        new ParallelAgent({
          name: 'fan',
          subAgents: [new GatedLeaf('b1', g.promise), new GatedLeaf('b2', g.promise)],
        }),
        new SequentialAgent({ name: 'inner', subAgents: [new GatedLeaf('c', Promise.resolve())] }),
        // Its first advance writes a checkpoint event: created pending, advanced by its own job.
        new LoopAgent({ name: 'loop', maxIterations: 1, subAgents: [new GatedLeaf('d', Promise.resolve())] }),
      ],
    });
    const engine = await engineOn(backend, { apps: [{ name: 'nest', agent }] });
    try {
      const run = await engine.enqueue({ app: 'nest', userId: 'u', input: 'go' });
      const rows = async () =>
        queryRows<Row>(
          engine.store.db,
          sql`select path, status, checkpoint, created_at = updated_at as same from nodes
              where invocation_id = ${run.invocationId} order by path`,
        );
      // While both branches wait: the parallel was never updated after its insert, yet it is running and its
      // checkpoint lists its branches.
      let seen: Row[] = [];
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        seen = await rows();
        if (
          seen.filter((r) => r.path.startsWith('root/fan/')).every((r) => r.status === 'running') &&
          seen.length >= 4
        )
          break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const fan = seen.find((r) => r.path === 'root/fan');
      expect(fan).toMatchObject({
        status: 'running',
        checkpoint: { children: { b1: 'pending', b2: 'pending' } },
        same: true,
      });
      g.open();
      expect((await engine.wait(run.invocationId)).status).toBe('completed');
      const done = await rows();
      expect(done.every((r) => r.status === 'completed')).toBe(true);
      // The inner sequence was inserted advanced too; the loop was not (its first advance writes an event).
      expect(done.map((r) => r.path)).toEqual([
        'root',
        'root/fan',
        'root/fan/b1',
        'root/fan/b2',
        'root/inner',
        'root/inner/c',
        'root/loop',
        'root/loop/d#0',
      ]);
      const texts: string[] = [];
      for await (const e of engine.events(run.invocationId)) {
        const text = e.content?.parts[0]?.text;
        if (e.author !== 'user' && text) texts.push(text);
      }
      expect(texts.slice(0, 2).sort()).toEqual(['b1', 'b2']);
      expect(texts.slice(2)).toEqual(['c', 'd']);
    } finally {
      g.open();
      await engine.close();
    }
  });
});
