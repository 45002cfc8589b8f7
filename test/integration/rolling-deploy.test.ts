/**
 * Rolling deploys: a worker that serves another definition of an app leaves
 * the invocation for a worker that has it — jobs are routed by definition, and a stray wake-up is re-offered with
 * a delay and logged once, never run, never failed, no hot loop — and `engine.get` says which definition it needs.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, SequentialAgent, type Engine } from '../../src/index.js';
import { BullmqQueue } from '../../src/queue/index.js';
import { waitFor } from '../support/assert/wait-for.js';
import { scripted } from '../fixtures/agents.js';
import { createTestDatabase, testQueuePrefix, testRedisUrl } from '../support/services/services.js';

/** A logger whose JSON lines are kept for assertions. */
function capturingLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('rolling deploy over a shared BullMQ queue', () => {
  it('leaves a run of another definition to a worker that has it', async () => {
    const database = await createTestDatabase();
    const queue = { redis: testRedisUrl(), prefix: testQueuePrefix() };
    const v1 = () => new SequentialAgent({ name: 'pipeline', subAgents: [scripted('writer', 'v1 text')] });
    const v2Writer = scripted('writer', 'v2 text');
    const v2 = new SequentialAgent({
      name: 'pipeline',
      subAgents: [v2Writer, scripted('reviewer', 'reviewed')],
    });

    const old = capturingLogger();
    const oldWorkerAgent = v1();
    const oldWorker = await createEngine({
      apps: [{ name: 'app', agent: oldWorkerAgent }],
      database,
      queue,
      logger: old.logger,
      deferMs: 100,
    });
    engines.push(oldWorker);
    const producer = await createEngine({
      apps: [{ name: 'app', agent: v2 }],
      database,
      queue,
      worker: false,
      logger: pino({ level: 'silent' }),
    });
    engines.push(producer);

    const { invocationId } = await producer.enqueue({ app: 'app', userId: 'u', input: 'go' });
    const needed = (await producer.get(invocationId)).definitionHash;
    const oldHash = oldWorker.apps.get('app')?.definitionHash as string;
    expect(needed).toBe(producer.apps.get('app')?.definitionHash);
    expect(needed).not.toBe(oldHash);

    // Jobs are routed by definition: the old worker is never offered the run.
    const deferrals = () => old.lines.filter((l) => String(l.msg).includes('needs another definition'));
    // The enqueue wrote the root advanced, with its first leaf: nothing else has happened to the run.
    expect((await producer.nodes(invocationId)).map((n) => [n.path, n.status])).toEqual([
      ['pipeline', 'running'],
      ['pipeline/writer', 'pending'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // time for a wrong delivery to show, if any
    expect(deferrals()).toHaveLength(0);

    // A wake-up that does reach it anyway (a queue shared with an older release) is left, not run or failed:
    // re-offered later (100 ms, doubling), logged once however often it comes back.
    const stray = new BullmqQueue({
      connection: { redis: queue.redis },
      prefix: queue.prefix,
      leaseMs: 15_000,
    });
    try {
      await stray.enqueue([
        { invocationId, path: 'pipeline', wake: 90, definition: oldHash },
        { invocationId, path: 'pipeline', wake: 91, definition: oldHash },
      ]);
    } finally {
      await stray.close();
    }
    await waitFor(() => deferrals().length === 1, { what: 'the deferral log line' });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // several re-offers
    expect(deferrals()).toHaveLength(1);
    expect(deferrals()[0]).toMatchObject({ invocationId, needs: needed, has: oldHash });
    expect((await producer.get(invocationId)).status).toBe('queued');
    expect((oldWorkerAgent.subAgents[0] as unknown as { model: { calls: number } }).model.calls).toBe(0);

    // A worker of the new definition starts and finishes the run.
    const newWorker = await createEngine({
      apps: [{ name: 'app', agent: v2 }],
      database,
      queue,
      logger: pino({ level: 'silent' }),
    });
    engines.push(newWorker);
    const done = await producer.wait(invocationId, { timeoutMs: 30_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('reviewed');
    expect(v2Writer.model.calls).toBe(1);
  });
});
