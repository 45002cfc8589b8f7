/**
 * Budgets across SIGKILLs: a call's spend is counted in the commit that stores its event,
 * so a worker killed between a model call and that commit loses the count with the event (the successor makes the
 * call again and counts it once), and a worker killed after the commit leaves it counted once (the successor does
 * not call again). Real `agentloom worker` processes on PostgreSQL and Redis; the fixture's model marks every call
 * it receives in a ledger (test/e2e/fixtures/budget-apps.ts), as a provider's bill would.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../support/processes/cli.js';
import {
  Cluster,
  fileServices,
  marksOf,
  nodeLease,
  waitForMarks,
  type NodeLease,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { CALL_USAGE } from '../fixtures/budget-apps.js';

const { options, engine, db } = await fileServices({
  appsModule: join(REPO, 'test/e2e/fixtures/budget-apps.ts'),
});

/** The spend the database holds for the run (the `agent_spends` rows). */
async function spentTokens(id: string): Promise<number> {
  const { rows } = await db.query<{ n: string | null }>(
    'SELECT sum(tokens) AS n FROM agent_spends WHERE invocation_id = $1',
    [id],
  );
  return Number(rows[0]?.n ?? 0);
}

/** SIGKILLs the worker holding `spender`, and waits until another worker claimed the step. */
async function killHolder(cluster: Cluster, id: string): Promise<NodeLease> {
  const held = await nodeLease(db, id, 'spender');
  expect(held?.status).toBe('running');
  const victim = cluster.byPid(held?.pid ?? -1);
  expect(victim, `lease owner ${held?.owner} is one of our workers`).toBeDefined();
  await victim?.kill();
  return waitFor(
    async () => {
      const now = await nodeLease(db, id, 'spender');
      return now && now.attempt > (held?.attempt ?? 0) && now.pid !== victim?.pid ? now : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, what: 'another worker to claim the killed step' },
  );
}

describe('budget spend across SIGKILLed workers', () => {
  it('counts each committed call exactly once: never the uncommitted call, never a committed one twice', async () => {
    const cluster = new Cluster(options);
    await cluster.start(3);
    const run = 'budget-crash';
    const { invocationId: id } = await engine.enqueue({
      app: 'budget_crash',
      userId: 'e2e',
      input: 'spend',
      stateDelta: { run },
    });

    // Killed after the first call's commit (its tool waits): the call is counted once, and stays so.
    await waitForMarks(db, 'budget-tool', run, { timeoutMs: 90_000 });
    expect(await spentTokens(id)).toBe(150);
    await killHolder(cluster, id);

    // The successor runs the tool again and makes the second call, which never answers: killed after the call,
    // before its commit. Nothing of it is counted.
    await waitForMarks(db, 'budget-call', run, { count: 2, timeoutMs: 90_000 });
    expect(await spentTokens(id)).toBe(150);
    await killHolder(cluster, id);

    const done = await engine.wait(id, { timeoutMs: 90_000 });
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(done.output).toBe('spent');
    // The model was called three times (the second call twice: once by the killed worker), the first never again.
    const calls = (await marksOf(db, 'budget-call', run)).map((m) => m.key);
    expect(calls).toEqual([`${run}:0`, `${run}:1`, `${run}:1`]);
    // The spend is exactly the usage of the calls whose events were stored: two, 300 tokens (never 150 × 3).
    const usages: number[] = [];
    for await (const event of engine.events(id)) {
      if (event.author === 'spender' && event.actions.usage)
        usages.push(event.actions.usage.totalTokens ?? 0);
    }
    expect(usages).toEqual([CALL_USAGE.totalTokens, CALL_USAGE.totalTokens]);
    expect(await spentTokens(id)).toBe(300);
    expect(done.spent).toMatchObject({ tokens: 300, inputTokens: 200, outputTokens: 100, modelCalls: 2 });
    expect(done.spent.byAgent.spender?.modelCalls).toBe(2);
  });
});
