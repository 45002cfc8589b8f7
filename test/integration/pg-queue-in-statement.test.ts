/**
 * The PostgreSQL-only mode adds a run's first job in the enqueue's own statement: the queue's tables
 * are in the store's database, so the job commits with the invocation — one transaction, no wake-up after the
 * commit for a crash between the two to lose, one round trip fewer in the run's start. A queue in another
 * database gets its jobs after the commit, as before. Shown on a real PostgreSQL, with BullMQ's own worker
 * running the jobs; nothing here is timed.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { BaseAgent, createEngine, createEvent, SequentialAgent, type Engine } from '../../src/index.js';
import { BULLMQ_PG_SCHEMA } from '../../src/queue/bullmq-queue.js';
import { sameDatabase } from '../../src/engine/create-engine.js';
import { recordSentStatements } from '../support/assert/sent-statements.js';
import { createTestDatabase, testQueuePrefix } from '../support/services/services.js';

const sent = recordSentStatements();
const url = await createTestDatabase();
const logger = pino({ level: 'silent' });

const engines: Engine[] = [];
afterAll(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

/** Says hello. */
class Say extends BaseAgent {
  protected override async *runImpl() {
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'hello' }] } });
  }
}

const apps = [
  {
    name: 'pair',
    agent: new SequentialAgent({ name: 'pair', subAgents: [new Say({ name: 'a' }), new Say({ name: 'b' })] }),
  },
];

async function engine(options: { queueUrl: string; prefix: string; worker: boolean }): Promise<Engine> {
  const e = await createEngine({
    apps,
    database: url,
    queue: { postgres: options.queueUrl, prefix: options.prefix },
    worker: options.worker,
    logger,
  });
  engines.push(e);
  return e;
}

/** The transaction id that wrote the invocation, and each BullMQ job of its run in `queueUrl`'s database with its own. */
async function writers(
  invocationId: string,
  queueUrl: string,
): Promise<{ invocation: string; jobs: { id: string; xmin: string }[] }> {
  const store = new pg.Client({ connectionString: url });
  const queue = new pg.Client({ connectionString: queueUrl });
  await Promise.all([store.connect(), queue.connect()]);
  try {
    const inv = await store.query<{ xmin: string }>('select xmin::text from invocations where id = $1', [
      invocationId,
    ]);
    const jobs = await queue.query<{ id: string; xmin: string }>(
      `select id, xmin::text from "${BULLMQ_PG_SCHEMA}".job where id like $1 order by id`,
      [`${invocationId}|%`],
    );
    return { invocation: inv.rows[0]?.xmin ?? 'none', jobs: jobs.rows };
  } finally {
    await Promise.all([store.end(), queue.end()]);
  }
}

/**
 * Statements sent since `sent` was emptied that add a BullMQ job by themselves: not within an enqueue, and not
 * BullMQ's migration (which creates the function).
 */
function separateAdds(): string[] {
  return sent.filter(
    (s) =>
      /\badd_job\s*\(/.test(s) && !s.includes('insert into invocations') && !s.includes('create function'),
  );
}

describe("a run's first job on BullMQ's PostgreSQL backend", () => {
  it("is added by the enqueue's own statement, in its transaction, and BullMQ's worker runs it", async () => {
    const prefix = testQueuePrefix();
    const producer = await engine({ queueUrl: url, prefix, worker: false });
    sent.length = 0;
    const { invocationId } = await producer.enqueue({ app: 'pair', userId: 'u', input: 'go' });
    expect(separateAdds()).toEqual([]);
    const { invocation, jobs } = await writers(invocationId, url);
    // One job, the first leaf's, written by the transaction that wrote the invocation.
    expect(jobs).toEqual([{ id: `${invocationId}|pair/a|1`, xmin: invocation }]);

    await engine({ queueUrl: url, prefix, worker: true });
    const done = await producer.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe('hello');
  });

  it('is added after the commit when the queue is in another database, and runs the same', async () => {
    const otherUrl = await createTestDatabase();
    const prefix = testQueuePrefix();
    const producer = await engine({ queueUrl: otherUrl, prefix, worker: false });
    sent.length = 0;
    const { invocationId } = await producer.enqueue({ app: 'pair', userId: 'u', input: 'go' });
    expect(separateAdds()).toHaveLength(1);
    const { jobs } = await writers(invocationId, otherUrl);
    expect(jobs.map((j) => j.id)).toEqual([`${invocationId}|pair/a|1`]);

    await engine({ queueUrl: otherUrl, prefix, worker: true });
    const done = await producer.wait(invocationId, { timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
  });
});

describe('sameDatabase', () => {
  it('tells URLs of one database from those of another, defaults filled in', () => {
    expect(sameDatabase('postgres://u@127.0.0.1:5432/db', 'postgresql://u@127.0.0.1/db')).toBe(true);
    expect(sameDatabase('postgres://u:secret@h:6000/db', 'postgres://u@h:6000/db?sslmode=disable')).toBe(
      true,
    );
    expect(sameDatabase('postgres://u@h:6000/db', 'postgres://u@h:6000/other')).toBe(false);
    expect(sameDatabase('postgres://u@h:6000/db', 'postgres://u@h2:6000/db')).toBe(false);
    expect(sameDatabase('postgres://u@h:6000/db', 'postgres://u@h:6001/db')).toBe(false);
    expect(sameDatabase('postgres://u@h/db', 'postgres://v@h/db')).toBe(false);
    expect(sameDatabase('not a url', 'not a url')).toBe(false);
  });

  it('reads Unix-socket URLs as PostgreSQL does (a host parameter, or socket:)', () => {
    const sock = '/var/run/postgresql';
    expect(sameDatabase(`postgres://u@/db?host=${sock}`, `socket:${sock}?db=db&user=u`)).toBe(true);
    expect(sameDatabase(`postgres://u@/db?host=${sock}`, 'postgres://u@localhost/db')).toBe(false);
    expect(sameDatabase(`socket:${sock}?db=db&user=u`, `socket:${sock}?db=other&user=u`)).toBe(false);
  });
});
