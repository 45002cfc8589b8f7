/**
 * A parallel join decided from the checkpoint the last batch of branch ends returned (every branch's status and
 * escalation are recorded there), and ended with its parent's advance in one statement (the parent, read by that
 * batch, goes from running to running: it is never made runnable for a job of its own): no transaction, no read
 * of the branches. Escalation and output come out as the transactional join
 * gives them. On PGlite and PostgreSQL (transactions counted on PostgreSQL, where each is a BEGIN sent).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEvent,
  ParallelAgent,
  SequentialAgent,
  type Event,
  type InvocationContext,
} from '../../src/index.js';
import { queryRows } from '../../src/store/db/database.js';
import { backends, engineOn } from '../support/services/engines.js';
import { recordSentStatements } from '../support/assert/sent-statements.js';

// Every statement any pg client of this file sends (each test file runs in its own worker).
const sent = recordSentStatements();

/** Says its name; with `escalate`, escalates. */
class Say extends BaseAgent {
  constructor(
    name: string,
    private readonly escalate = false,
  ) {
    super({ name });
  }

  protected override async *runImpl(_ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    yield createEvent({
      author: this.name,
      content: { role: 'model', parts: [{ text: `said ${this.name}` }] },
      ...(this.escalate ? { actions: { escalate: true } } : {}),
    });
  }
}

const fan = (escalating: boolean) =>
  new SequentialAgent({
    name: 'root',
    subAgents: [
      new ParallelAgent({
        name: 'fan',
        subAgents: [new Say('b1', escalating), new Say('b2'), new Say('b3')],
      }),
      new Say('after'),
    ],
  });

interface NodeOut {
  path: string;
  status: string;
  escalated: boolean;
  output: string | null;
  checkpoint: Record<string, unknown>;
}

describe.each(backends)('a parallel join from its checkpoint ($name)', (backend) => {
  it('ends the parallel with the last branch output and runs the next step, with no transaction', async () => {
    const engine = await engineOn(backend, { apps: [{ name: 'fan', agent: fan(false) }] });
    try {
      // A warm-up run: the first statements of a connection are not what is counted.
      const warm = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      await engine.wait(warm.invocationId);
      sent.length = 0;
      const run = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      const done = await engine.wait(run.invocationId);
      const transactions = sent.filter((t) => t === 'begin').length;
      expect(done).toMatchObject({ status: 'completed', output: 'said after', escalated: false });
      const rows = await queryRows<NodeOut>(
        engine.store.db,
        sql`select path, status, escalated, output, checkpoint from nodes
            where invocation_id = ${run.invocationId} and path = 'root/fan'`,
      );
      const node = rows[0] as NodeOut;
      expect(node).toMatchObject({
        status: 'completed',
        escalated: false,
        checkpoint: { children: { b1: 'completed', b2: 'completed', b3: 'completed' } },
      });
      // Its output is the newest final text under it: one of the branches' (whichever was stored last).
      expect(['said b1', 'said b2', 'said b3']).toContain(node.output);
      const texts: string[] = [];
      for await (const e of engine.events(run.invocationId)) {
        const text = e.content?.parts[0]?.text;
        if (e.author !== 'user' && text) texts.push(text);
      }
      expect(texts.at(-1)).toBe('said after');
      // The newest branch event is the parallel's output, as the transactional join's read would give.
      expect(texts.at(-2)).toBe(node.output);
      if (backend.name === 'postgres') expect(transactions).toBe(0);
      // The sequence was advanced by the join's statement itself: never woken (made pending) for a job of its own.
      const [root] = await queryRows<{ status: string; wake: number }>(
        engine.store.db,
        sql`select status, wake from nodes where invocation_id = ${run.invocationId} and path = 'root'`,
      );
      expect(root).toEqual({ status: 'completed', wake: 1 });
    } finally {
      await engine.close();
    }
  });

  it("records a branch's escalation in the checkpoint, and the join escalates the parallel", async () => {
    const engine = await engineOn(backend, { apps: [{ name: 'fan', agent: fan(true) }] });
    try {
      const run = await engine.enqueue({ app: 'fan', userId: 'u', input: 'go' });
      const done = await engine.wait(run.invocationId);
      expect(done).toMatchObject({ status: 'completed', escalated: true });
      const rows = await queryRows<NodeOut>(
        engine.store.db,
        sql`select path, status, escalated, output, checkpoint from nodes
            where invocation_id = ${run.invocationId} order by path`,
      );
      expect(rows.find((r) => r.path === 'root/fan')).toMatchObject({
        status: 'completed',
        escalated: true,
        checkpoint: {
          children: { b1: 'completed', b2: 'completed', b3: 'completed' },
          escalated: { b1: true },
        },
      });
      // An escalation ends the sequence: the step after the parallel never started.
      expect(rows.map((r) => r.path)).not.toContain('root/after');
    } finally {
      await engine.close();
    }
  });
});
