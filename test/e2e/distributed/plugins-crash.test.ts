/**
 * Plugins across real `agentloom worker --apps` processes (PostgreSQL, Redis) that are SIGKILLed; the apps module's
 * `plugins` export (test/e2e/fixtures/plugin-apps.ts) marks what its callbacks do in the ledger, from whichever
 * worker ran them:
 * - a plugin's beforeModelCallback answer is stored as the model's: the worker killed after that commit (in the
 *   tool the answer called) leaves a successor that does not ask the plugin again;
 * - afterRunCallback runs exactly once per run, for 32 runs on three workers, killed while runs are in flight;
 * - a guardrail plugin blocking a tool by name applies to every agent of a YAML app the workers load.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../support/processes/cli.js';
import {
  Cluster,
  enqueueRuns,
  fileServices,
  marksOf,
  nodeLease,
  stepsHeldBy,
  waitAllCompleted,
  waitForMarks,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';

const { options, engine, db } = await fileServices({
  appsModule: join(REPO, 'test/e2e/fixtures/plugin-apps.ts'),
});

/** The function responses the run stored, in order. */
async function toolResponses(id: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const e of engine.events(id)) {
    for (const part of e.content?.parts ?? [])
      if (part.functionResponse) out.push(part.functionResponse.response);
  }
  return out;
}

/** How many of `ids` have a mark `name`. */
async function markedRuns(name: string, ids: string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(DISTINCT split_part(key, ':', 1))::int AS n FROM e2e_marks WHERE name = $1 AND split_part(key, ':', 1) = ANY($2)",
    [name, ids],
  );
  return rows[0]?.n ?? 0;
}

/** How many `after-run` marks each of `ids` has. */
async function afterRunCounts(ids: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; n: number }>(
    "SELECT split_part(key, ':', 1) AS id, count(*)::int AS n FROM e2e_marks WHERE name = 'after-run' AND split_part(key, ':', 1) = ANY($1) GROUP BY 1",
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.n]));
}

// One cluster for the whole file (a worker takes seconds to start on this machine), so one test in three phases.
describe('plugins across SIGKILLed workers', () => {
  it('guards every agent of a YAML app; a stored plugin answer is not asked again; afterRunCallback once per run', async () => {
    const cluster = new Cluster(options);
    await cluster.start(3);

    // 1. The guardrail: both agents of the YAML app were offered delete_all, neither ran it.
    const { invocationId: guarded } = await engine.enqueue({ app: 'guarded', userId: 'e2e', input: 'go' });
    const blocked = await engine.wait(guarded, { timeoutMs: 60_000 });
    expect(blocked.status, JSON.stringify(blocked.error)).toBe('completed');
    expect(await toolResponses(guarded)).toEqual([
      { error: 'blocked by guardrail: delete_all' },
      { error: 'blocked by guardrail: delete_all' },
    ]);
    expect((await marksOf(db, 'guard-blocked', guarded)).map((m) => m.key)).toEqual([
      `${guarded}:first_agent`,
      `${guarded}:second_agent`,
    ]);
    expect(await marksOf(db, 'deleted', guarded)).toEqual([]);

    // 2. The plugin answered the first model call with a call of plugin_wait; that answer was stored before the
    // tool started, and the tool waits: the worker is killed there, and replaced.
    const { invocationId: id } = await engine.enqueue({ app: 'plugin_crash', userId: 'e2e', input: 'go' });
    await waitForMarks(db, 'plugin-wait', id, { timeoutMs: 60_000 });
    const held = await nodeLease(db, id, 'answered');
    const victim = cluster.byPid(held?.pid ?? -1);
    expect(victim, `lease owner ${held?.owner} is one of our workers`).toBeDefined();
    await victim?.kill();
    const replacement = cluster.spawn();

    const done = await engine.wait(id, { timeoutMs: 60_000 });
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(done.output).toBe('done after the plugin');
    // The tool ran again on the successor (its response was not stored), the plugin's answer was not asked again.
    expect((await marksOf(db, 'plugin-wait', id)).length).toBe(2);
    const answers = await marksOf(db, 'plugin-answer', id);
    expect(answers.map((m) => m.key)).toEqual([`${id}:0`]);
    expect(answers[0]?.pid).toBe(victim?.pid);

    // 3. Thirty runs on three workers (a model call, a three-second tool, a model call each). Once every run is in
    // its tool, the worker holding the most steps is SIGKILLed: its runs end on the others.
    await replacement.waitStarted();
    const { ids } = await enqueueRuns(engine, 'after_run', 30, 'after-run');
    await waitFor(async () => (await markedRuns('pause-start', ids)) === ids.length, {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'every run in its tool',
    });
    const holding = await Promise.all(
      cluster.alive().map(async (w) => ({ w, steps: await stepsHeldBy(db, w.pid) })),
    );
    const [busiest] = holding.sort((a, b) => b.steps - a.steps);
    expect(busiest?.steps, JSON.stringify(holding.map((h) => h.steps))).toBeGreaterThan(0);
    await busiest?.w.kill();
    await waitAllCompleted(db, ids, 60_000);

    // Every run's end — the guarded run's, the killed one's, the thirty — is handled once, after its commit, by the
    // worker that ended it.
    const all = [guarded, id, ...ids];
    await waitFor(async () => (await afterRunCounts(all)).size === all.length, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'an after-run mark for every run',
    });
    const counts = await afterRunCounts(all);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(counts.size).toBe(all.length);
  });
});
