/**
 * A fan-out with a shared queue (BullMQ on Redis): the worker whose advance creates a fan-out's leaves
 * claims as many as it has idle slots in the same statement and runs them itself, with no job in Redis and no
 * claim of their own; only the rest go through the queue, to every worker. The worker's concurrency holds for
 * both together (BullMQ is lent the slots back as the leaves end), and every leaf runs once. The join runs on
 * the worker whose batch of branch ends made it runnable, from what that batch read (no claim read, no
 * transaction).
 *
 * Observed through Redis (the jobs BullMQ holds), the leaves held at a gate and the statements sent (a hook on
 * pg's client); nothing here is timed.
 */
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEngine,
  createEvent,
  ParallelAgent,
  SequentialAgent,
  type Engine,
  type InvocationContext,
} from '../../src/index.js';
import { recordSentStatements } from '../support/assert/sent-statements.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

/** Every statement this file's engines send (texts, lower-cased), for the second test. */
const sent = recordSentStatements();

const BRANCHES = 10;
const CONCURRENCY = 4;

const engines: Engine[] = [];
const queues: Queue[] = [];
afterEach(async () => {
  gate.open();
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all(queues.splice(0).map((q) => q.close()));
});

/** The leaves that have started, and the gate that holds them. */
let entered = 0;
let gate = { promise: Promise.resolve(), open: () => undefined as void };
function closeGate(): void {
  let open = () => undefined as void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
  entered = 0;
}

/** A leaf that counts itself in, waits at the gate, then emits one event. */
class Held extends BaseAgent {
  protected override async *runImpl(ctx: InvocationContext) {
    entered += 1;
    await gate.promise;
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: ctx.nodePath }] } });
  }
}

// A sequence whose first child is the fan-out: the root's job (on a worker) creates the branches, as in W3.
const apps = () => [
  {
    name: 'fanjoin',
    agent: new SequentialAgent({
      name: 'fanjoin',
      subAgents: [
        new ParallelAgent({
          name: 'fan',
          subAgents: Array.from({ length: BRANCHES }, (_, i) => new Held({ name: `b${i}` })),
        }),
        new Held({ name: 'join' }),
      ],
    }),
  },
];

describe('a fan-out created by a worker on a shared queue', () => {
  it('runs as many leaves as the worker has idle slots without the queue, and the rest through it', async () => {
    const database = await createTestDatabase();
    const queue = { redis: testRedisUrl(), prefix: testQueuePrefix() };
    const logger = pino({ level: 'silent' });
    const producer = await createEngine({ apps: apps(), database, queue, worker: false, logger });
    engines.push(producer);
    closeGate();
    const { invocationId } = await producer.enqueue({ app: 'fanjoin', userId: 'u', input: 'go' });
    const { definitionHash } = await producer.get(invocationId);
    const bull = new Queue(`${queue.prefix}-steps-${definitionHash}`, { connection: { url: queue.redis } });
    queues.push(bull);

    const worker = await createEngine({
      apps: apps(),
      database,
      queue,
      logger,
      worker: { concurrency: CONCURRENCY },
      reconcileIntervalMs: 0,
    });
    engines.push(worker);
    // The root's job advanced and ended; the worker's slots are full: 3 leaves claimed by that advance (the job
    // itself held the fourth slot), and 1 of the queued jobs since.
    await waitFor(() => entered === CONCURRENCY, { timeoutMs: 60_000 });
    const leaves = async () =>
      (await producer.nodes(invocationId)).filter((n) => /^fanjoin\/fan\/b\d$/.test(n.path));
    await waitFor(async () => (await leaves()).filter((n) => n.status === 'running').length === CONCURRENCY, {
      timeoutMs: 60_000,
    });
    // The jobs in Redis: one per leaf not claimed by the advance (6 waiting, 1 taken). With every leaf queued
    // there would be 10; with the lent slots not taken from BullMQ's concurrency, 7 leaves would be running.
    const counts = await bull.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    expect(counts).toEqual({ waiting: BRANCHES - CONCURRENCY, active: 1, delayed: 0, prioritized: 0 });
    expect(entered).toBe(CONCURRENCY);
    expect((await leaves()).filter((n) => n.status === 'running')).toHaveLength(CONCURRENCY);

    gate.open();
    const view = await producer.wait(invocationId, { timeoutMs: 60_000 });
    expect(view.status).toBe('completed');
    expect(entered).toBe(BRANCHES + 1);
    const nodes = await producer.nodes(invocationId);
    const ran = nodes.filter((n) => n.kind !== 'sequential' && n.kind !== 'parallel');
    expect(ran.map((n) => [n.path, n.status, n.attempt]).sort()).toEqual(
      [...Array.from({ length: BRANCHES }, (_, i) => `fanjoin/fan/b${i}`), 'fanjoin/join']
        .sort()
        .map((path) => [path, 'completed', 1]),
    );
    expect(await bull.getJobCounts('waiting', 'active', 'delayed')).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
    });
  });
});

describe('a fan-out and its join on one worker with idle slots (shared queue)', () => {
  it('claims no branch and reads no node on its own: the branches start from the advance, the join from the ends', async () => {
    const database = await createTestDatabase();
    const queue = { redis: testRedisUrl(), prefix: testQueuePrefix() };
    const logger = pino({ level: 'silent' });
    const producer = await createEngine({ apps: apps(), database, queue, worker: false, logger });
    engines.push(producer);
    engines.push(await createEngine({ apps: apps(), database, queue, logger, reconcileIntervalMs: 0 }));
    // The gate stays open: the leaves run at once.
    gate.open();
    const warm = await producer.enqueue({ app: 'fanjoin', userId: 'u', input: 'go' });
    await producer.wait(warm.invocationId, { timeoutMs: 60_000 });
    sent.length = 0;
    const { invocationId } = await producer.enqueue({ app: 'fanjoin', userId: 'u', input: 'go' });
    expect((await producer.wait(invocationId, { timeoutMs: 60_000 })).status).toBe('completed');
    const statements = sent.filter((t) => !/^(listen|unlisten)\b/.test(t));
    // A job's claim (store/step/step-claims.ts, one job's or a batch's): it takes a new attempt of its node.
    const claims = statements.filter((t) => t.includes('set attempt = n.attempt + 1'));
    // One claim: the root's job (its read). Without the branches claimed by the advance there is one for each
    // branch (batched: at least one more statement); with the join's job through the queue, its claim read and
    // the advance's transaction (BEGIN, reads, COMMIT).
    expect(claims, statements.join('\n---\n')).toHaveLength(1);
    expect(statements.filter((t) => t === 'begin')).toEqual([]);
  });
});
