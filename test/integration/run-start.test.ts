/**
 * The start and the end of a run, as few statements as they can be:
 *
 * - with a shared queue (BullMQ on Redis), the enqueue writes a workflow root's first advance when it needs
 *   nothing but its empty checkpoint: the root `running`, its first leaves `pending`, and the queue carries the
 *   leaves' jobs (no job, read or advance statement of the root); anything else leaves the root to its job;
 * - `wait` on an invocation this engine enqueued, known unsettled from the LISTEN that began before it existed,
 *   does not read it before it settled; when the statement that ended it sent its view with the notification (a
 *   leaf completion that ends the run does, unless the view exceeds a NOTIFY payload), not at all, else once; a reconnect of that LISTEN (notifications lost) drops what it
 *   knew, and an invocation that settled before `wait` was called is still answered at once.
 *
 * Counted with a hook on pg's client (every statement this file's engines send), so nothing here is timed.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEngine,
  createEvent,
  LlmAgent,
  LoopAgent,
  ParallelAgent,
  ScriptedModel,
  SequentialAgent,
  type Engine,
  type InvocationContext,
} from '../../src/index.js';
import { scripted } from '../fixtures/agents.js';
import { recordSentStatements } from '../support/assert/sent-statements.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';
import { waitFor } from '../support/assert/wait-for.js';

const sent = recordSentStatements();

/** `wait`'s read of an invocation (store/repos/tool-requests.ts `invocationWithPending`). */
const isInvocationRead = (text: string) => text.startsWith("select json_build_object('inv', row_to_json(i)");

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

const silent = pino({ level: 'silent' });

/** A leaf that emits one event (no model: its step is one claim and one commit). */
class Step extends BaseAgent {
  protected override async *runImpl(ctx: InvocationContext) {
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: ctx.nodePath }] } });
  }
}

/** Characters of the `large` app's output: its view exceeds what a NOTIFY payload may carry (8000 bytes). */
const LARGE_OUTPUT = 9000;

/** A leaf whose event (and so the run's output) is {@link LARGE_OUTPUT} characters long. */
class Large extends BaseAgent {
  protected override async *runImpl() {
    yield createEvent({
      author: this.name,
      content: { role: 'model', parts: [{ text: 'x'.repeat(LARGE_OUTPUT) }] },
    });
  }
}

/** Closed while a measured `wait` starts, so its first look finds the run unsettled (see `waitCountingReads`). */
let gate = { promise: Promise.resolve(), open: () => undefined as void };
function closeGate(): void {
  let open = () => undefined as void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  gate = { promise, open };
}

/** A leaf that waits for the gate, then emits one event. */
class Gate extends Step {
  protected override async *runImpl(ctx: InvocationContext) {
    await gate.promise;
    yield* super.runImpl(ctx);
  }
}

/**
 * `engine.wait` on a run held at the gate, counting the reads of the invocation `wait` makes: the gate opens after
 * `wait`'s first read (which therefore saw the run unsettled), or after 200 ms when `wait` reads nothing first.
 */
async function waitCountingReads(engine: Engine, invocationId: string) {
  let reads = 0;
  const get = engine.get.bind(engine);
  const timer = setTimeout(() => gate.open(), 200);
  Object.assign(engine, {
    get: async (id: string) => {
      reads += 1;
      const view = await get(id);
      gate.open();
      return view;
    },
  });
  try {
    const view = await engine.wait(invocationId, { timeoutMs: 60_000 });
    return { view, reads };
  } finally {
    clearTimeout(timer);
    Object.assign(engine, { get });
  }
}

const apps = () => [
  {
    name: 'spender',
    agent: new SequentialAgent({
      name: 'spender',
      subAgents: [
        new LlmAgent({
          name: 'thinker',
          model: new ScriptedModel({
            respond: () => 'thought',
            usage: { promptTokens: 10, outputTokens: 5, totalTokens: 15 },
          }),
        }),
        new Gate({ name: 'last' }),
      ],
    }),
  },
  {
    name: 'large',
    agent: new SequentialAgent({
      name: 'large',
      subAgents: [new Gate({ name: 'g' }), new Large({ name: 'big' })],
    }),
  },
  {
    name: 'steps',
    agent: new SequentialAgent({
      name: 'steps',
      subAgents: [new Step({ name: 's1' }), new Gate({ name: 's2' }), new Step({ name: 's3' })],
    }),
  },
  {
    name: 'seq',
    agent: new SequentialAgent({
      name: 'seq',
      subAgents: [scripted('a', 'one'), scripted('b', 'two'), scripted('c', 'three')],
    }),
  },
  {
    name: 'fan',
    agent: new ParallelAgent({ name: 'fan', subAgents: [scripted('x', 'ex'), scripted('y', 'why')] }),
  },
  {
    // Its first child is a workflow: the root's first advance is its job's (a nested start is not planned).
    name: 'nested',
    agent: new SequentialAgent({
      name: 'nested',
      subAgents: [new SequentialAgent({ name: 'inner', subAgents: [scripted('i', 'in')] })],
    }),
  },
  {
    name: 'loop',
    agent: new LoopAgent({ name: 'loop', maxIterations: 2, subAgents: [scripted('l', 'again')] }),
  },
];

async function redisEngines(): Promise<{ producer: Engine; worker: () => Promise<Engine> }> {
  const database = await createTestDatabase();
  const queue = { redis: testRedisUrl(), prefix: testQueuePrefix() };
  const producer = await createEngine({ apps: apps(), database, queue, worker: false, logger: silent });
  engines.push(producer);
  const worker = async () => {
    const engine = await createEngine({
      apps: apps(),
      database,
      queue,
      logger: silent,
      reconcileIntervalMs: 0,
    });
    engines.push(engine);
    return engine;
  };
  return { producer, worker };
}

describe('a workflow root started by the enqueue (shared queue)', () => {
  it('writes the root advanced with its first leaves; the run goes on from the leaves', async () => {
    const { producer, worker } = await redisEngines();
    const seq = await producer.enqueue({ app: 'seq', userId: 'u', input: 'go' });
    const fan = await producer.enqueue({ app: 'fan', userId: 'u', input: 'go' });
    const loop = await producer.enqueue({ app: 'loop', userId: 'u', input: 'go' });

    const shape = async (id: string) =>
      (await producer.nodes(id)).map((n) => [n.path, n.status, n.parentPath] as const);
    // No worker has run anything yet: what is there is the enqueue's.
    expect(await shape(seq.invocationId)).toEqual([
      ['seq', 'running', null],
      ['seq/a', 'pending', 'seq'],
    ]);
    expect((await producer.nodes(seq.invocationId))[0]?.checkpoint).not.toEqual({});
    expect((await shape(fan.invocationId)).sort()).toEqual([
      ['fan', 'running', null],
      ['fan/x', 'pending', 'fan'],
      ['fan/y', 'pending', 'fan'],
    ]);
    expect(await shape(loop.invocationId)).toEqual([
      ['loop', 'running', null],
      ['loop/l#0', 'pending', 'loop'],
    ]);
    expect((await producer.get(seq.invocationId)).status).toBe('queued');

    await worker();
    const ended = await Promise.all(
      [seq, fan, loop].map(({ invocationId }) => producer.wait(invocationId, { timeoutMs: 60_000 })),
    );
    expect(ended.map((v) => v.status)).toEqual(['completed', 'completed', 'completed']);
    expect(ended[0]?.output).toBe('three');
    // Every leaf ran once; the loop's two iterations each ran its leaf.
    const leaves = (await producer.nodes(seq.invocationId)).filter((n) => n.kind !== 'sequential');
    expect(leaves.map((n) => [n.path, n.status, n.attempt])).toEqual([
      ['seq/a', 'completed', 1],
      ['seq/b', 'completed', 1],
      ['seq/c', 'completed', 1],
    ]);
    const events = await producer.getSession(ended[2]?.sessionId as string);
    expect(events.events.filter((e) => e.author === 'l').map((e) => e.content?.parts[0]?.text)).toEqual([
      'again',
      'again',
    ]);
  });

  it('leaves a root whose first advance starts a workflow to its job', async () => {
    const { producer, worker } = await redisEngines();
    const { invocationId } = await producer.enqueue({ app: 'nested', userId: 'u', input: 'go' });
    expect((await producer.nodes(invocationId)).map((n) => [n.path, n.status])).toEqual([
      ['nested', 'pending'],
    ]);
    await worker();
    expect((await producer.wait(invocationId, { timeoutMs: 60_000 })).output).toBe('in');
  });

  it('leaves the in-process queue as it was: the root is pending for its job, which claims the first leaf', async () => {
    const engine = await createEngine({
      apps: apps(),
      database: await createTestDatabase(),
      queue: 'local',
      worker: false,
      logger: silent,
    });
    engines.push(engine);
    const { invocationId } = await engine.enqueue({ app: 'seq', userId: 'u', input: 'go' });
    expect((await engine.nodes(invocationId)).map((n) => [n.path, n.status])).toEqual([['seq', 'pending']]);
  });

  it('costs a 3-leaf run 1 statement for the enqueue, 1 claim, 3 commits and no read for wait', async () => {
    const { producer, worker } = await redisEngines();
    await worker();
    // Warm-up (first-use paths: LISTEN, prepared statements).
    const warm = await producer.enqueue({ app: 'steps', userId: 'u', input: 'go' });
    await producer.wait(warm.invocationId, { timeoutMs: 60_000 });
    closeGate();
    sent.length = 0;
    const { invocationId } = await producer.enqueue({ app: 'steps', userId: 'u', input: 'go' });
    const { view, reads } = await waitCountingReads(producer, invocationId);
    expect(view.status).toBe('completed');
    expect(reads).toBe(0);
    const statements = sent.filter((t) => !/^(begin|commit|listen|unlisten)\b/.test(t));
    // Without the root started by the enqueue: + the root's claim and advance, - the first leaf's claim; without
    // the watch: + a read; without the view in the end's notification (sent by the worker): + a read.
    expect(statements.filter(isInvocationRead)).toHaveLength(0);
    expect(statements, statements.join('\n---\n')).toHaveLength(5);
    expect(view).toEqual(await producer.get(invocationId));
  });
});

/** An engine on the in-process queue, its worker running, on a database of its own. */
async function localEngine(): Promise<Engine> {
  const engine = await createEngine({
    apps: apps(),
    database: await createTestDatabase(),
    queue: 'local',
    logger: silent,
    reconcileIntervalMs: 0,
  });
  engines.push(engine);
  return engine;
}

describe('wait on an invocation this engine enqueued', () => {
  it("returns the view its end's notification carried, without a read: the view engine.get reads", async () => {
    const engine = await localEngine();
    closeGate();
    const { invocationId } = await engine.enqueue({ app: 'steps', userId: 'u', input: 'go' });
    const { view, reads } = await waitCountingReads(engine, invocationId);
    expect(view.status).toBe('completed');
    expect(reads).toBe(0);
    expect(view).toEqual(await engine.get(invocationId));
  });

  it("carries the run's spend in that view, as engine.get reads it", async () => {
    const engine = await localEngine();
    closeGate();
    const { invocationId } = await engine.enqueue({ app: 'spender', userId: 'u', input: 'go' });
    const { view, reads } = await waitCountingReads(engine, invocationId);
    expect(reads).toBe(0);
    expect(view.spent).toMatchObject({ tokens: 15, modelCalls: 1 });
    expect(view.spent.byAgent.thinker).toMatchObject({ tokens: 15, modelCalls: 1 });
    expect(view).toEqual(await engine.get(invocationId));
  });

  it('reads it once, when it has settled, when its view is too large for a notification', async () => {
    const engine = await localEngine();
    closeGate();
    const { invocationId } = await engine.enqueue({ app: 'large', userId: 'u', input: 'go' });
    const { view, reads } = await waitCountingReads(engine, invocationId);
    expect(view.status).toBe('completed');
    expect(view.output).toHaveLength(LARGE_OUTPUT);
    expect(reads).toBe(1);
  });

  it('answers at once an invocation that settled before wait was called', async () => {
    const engine = await localEngine();
    const { invocationId } = await engine.enqueue({ app: 'seq', userId: 'u', input: 'go' });
    // The settling notification has reached this process (its LISTEN delivered it to the watch).
    await waitFor(async () => (await engine.get(invocationId)).status === 'completed', { timeoutMs: 60_000 });
    await waitFor(() => !(engine as unknown as WithWatch).settles.knownUnsettled(invocationId), {
      timeoutMs: 60_000,
    });
    const view = await engine.wait(invocationId, { timeoutMs: 1 });
    expect(view.status).toBe('completed');
  });

  it('forgets what it knew when its LISTEN connection was lost (notifications sent meanwhile are lost)', async () => {
    const database = await createTestDatabase();
    const engine = await createEngine({
      apps: apps(),
      database,
      queue: 'local',
      worker: false,
      logger: silent,
    });
    engines.push(engine);
    const { invocationId } = await engine.enqueue({ app: 'seq', userId: 'u', input: 'go' });
    const watch = (engine as unknown as WithWatch).settles;
    expect(watch.knownUnsettled(invocationId)).toBe(true);
    const admin = new pg.Client({ connectionString: database });
    await admin.connect();
    try {
      await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
         where query like 'LISTEN %' and datname = current_database() and pid <> pg_backend_pid()`,
      );
    } finally {
      await admin.end();
    }
    await waitFor(() => !watch.knownUnsettled(invocationId), { timeoutMs: 30_000 });
    // Not known any more: wait reads (and times out on a run no worker runs), rather than trusting a lost notice.
    sent.length = 0;
    await expect(engine.wait(invocationId, { timeoutMs: 300 })).rejects.toThrow(/still queued/);
    expect(sent.filter(isInvocationRead).length).toBeGreaterThanOrEqual(1);
  });
});

interface WithWatch {
  settles: { knownUnsettled(id: string): boolean };
}

afterEach(() => {
  sent.length = 0;
});
