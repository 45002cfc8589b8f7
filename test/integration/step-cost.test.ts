/**
 * What one durable step costs the database, counted (not timed, so it cannot flake): statements and write
 * transactions per leaf step of a sequence on PostgreSQL, in steady state: at most the design budget
 * (ARCHITECTURE "Performance budget": 5 statements, 2 write transactions).
 */
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEngine,
  createEvent,
  SequentialAgent,
  type Engine,
  type InvocationContext,
} from '../../src/index.js';
import { recordSentWithTransactions } from '../support/assert/sent-statements.js';
import { createTestDatabase } from '../support/services/services.js';

/** A leaf that emits one event. */
class Step extends BaseAgent {
  protected override async *runImpl(ctx: InvocationContext) {
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: ctx.nodePath }] } });
  }
}

const STEPS = 20;
/** The design budget (ARCHITECTURE "Performance budget"); never raise these to make a test pass. */
const MAX_STATEMENTS_PER_STEP = 5;
const MAX_TRANSACTIONS_PER_STEP = 2;

// Every statement any pg client of this test file sends (each file runs in its own worker), and whether it ran
// inside an explicit transaction of its connection.
const sent = recordSentWithTransactions();

/** A statement that writes (in autocommit mode each one is a write transaction of its own). */
const writes = (text: string) =>
  /^(insert|update|delete)\b/.test(text) ||
  (text.startsWith('with') && /\b(insert|update|delete)\b/.test(text)) ||
  text.includes('pg_notify');

describe('cost of a step on PostgreSQL', () => {
  let engine: Engine;
  afterAll(async () => {
    await engine?.close();
  });

  it(`stays within ${MAX_STATEMENTS_PER_STEP} statements and ${MAX_TRANSACTIONS_PER_STEP} write transactions per leaf step`, async () => {
    const pipeline = (name: string, steps: number) => ({
      name,
      agent: new SequentialAgent({
        name: `${name}_pipe`,
        subAgents: Array.from({ length: steps }, (_, i) => new Step({ name: `${name}_s${i}` })),
      }),
    });
    engine = await createEngine({
      apps: [pipeline('short', STEPS), pipeline('long', 2 * STEPS)],
      database: await createTestDatabase(),
      queue: 'local',
      reconcileIntervalMs: 0,
      logger: pino({ level: 'silent' }),
    });
    // Warm-up runs (session creation, first-use paths), then the measured ones. A run of 2N steps minus a run of
    // N steps is the cost of N steps in steady state: the invocation's own start and end cancel out.
    for (const app of ['short', 'long']) {
      const warm = await engine.enqueue({ app, userId: 'u', input: 'go' });
      await engine.wait(warm.invocationId, { timeoutMs: 60_000 });
    }
    const short = await measure(engine, 'short');
    const long = await measure(engine, 'long');
    const statements = (long.statements - short.statements) / STEPS;
    const transactions = (long.transactions - short.transactions) / STEPS;
    console.log(
      `per leaf step in steady state: ${statements.toFixed(2)} statements, ${transactions.toFixed(2)} write transactions ` +
        `(a whole run of ${STEPS} steps: ${short.statements} statements, ${short.transactions} write transactions)`,
    );
    expect(statements).toBeLessThanOrEqual(MAX_STATEMENTS_PER_STEP);
    expect(transactions).toBeLessThanOrEqual(MAX_TRANSACTIONS_PER_STEP);
    // The runs did their work: every step wrote its event.
    expect(long.statements).toBeGreaterThan(short.statements);
  });
});

/** Statements and write transactions of one run of `app`. */
async function measure(engine: Engine, app: string): Promise<{ statements: number; transactions: number }> {
  sent.length = 0;
  const { invocationId } = await engine.enqueue({ app, userId: 'u', input: 'go' });
  const result = await engine.wait(invocationId, { timeoutMs: 60_000 });
  expect(result.status).toBe('completed');
  // Only the run's own work: engine.wait's reads (the invocation and its pending calls, re-read on each
  // notification and once a second) and LISTEN are not part of a step.
  const waiterRead = (s: string) =>
    s.includes('from "tool_requests"') ||
    (s.startsWith('select') && s.includes('from "invocations" where') && !s.includes('for update'));
  const steps = sent.filter(
    ({ text }) => !text.startsWith('listen') && !text.startsWith('unlisten') && !waiterRead(text),
  );
  // Write transactions: explicit ones, plus writes in autocommit mode.
  const explicit = steps.filter(({ text }) => text === 'begin').length;
  const autocommitWrites = steps.filter(({ text, inTransaction }) => !inTransaction && writes(text)).length;
  return { statements: steps.length, transactions: explicit + autocommitWrites };
}
