/**
 * Step-overhead benchmark of the embedded engine, side by side in one run: PGlite vs PostgreSQL, against a
 * baseline of one raw Postgres commit per step. Usage: npm run bench   (starts a local PostgreSQL unless
 * DATABASE_URL is set). Prints ms per sequential step, steps/s for concurrent runs, and ratios.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import {
  BaseAgent,
  createEngine,
  createEvent,
  SequentialAgent,
  type Engine,
  type InvocationContext,
} from '../src/index.js';
import { startLocalPostgres, type LocalServer } from '../test/support/local-services.js';

class Step extends BaseAgent {
  protected override async *runImpl(ctx: InvocationContext) {
    yield createEvent({
      author: this.name,
      content: { role: 'model', parts: [{ text: `step ${ctx.nodePath}` }] },
    });
  }
}

const pipeline = (steps: number) =>
  new SequentialAgent({
    name: 'pipe',
    subAgents: Array.from({ length: steps }, (_, i) => new Step({ name: `s${i}` })),
  });

async function timeRuns(engine: Engine, app: string, runs: number, concurrent: number): Promise<number> {
  const started = performance.now();
  for (let done = 0; done < runs; done += concurrent) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(concurrent, runs - done) }, () =>
        engine.enqueue({ app, userId: 'bench', input: 'go' }),
      ),
    );
    for (const { invocationId } of batch) {
      const result = await engine.wait(invocationId, { timeoutMs: 600_000 });
      if (result.status !== 'completed') throw new Error(`bench run ${result.status}`);
    }
  }
  return performance.now() - started;
}

async function measure(name: string, database: string | { pglite: string }) {
  const engine = await createEngine({
    apps: [
      { name: 'seq20', agent: pipeline(20) },
      { name: 'seq5', agent: pipeline(5) },
    ],
    database,
    logger: pino({ level: 'error' }),
    worker: { concurrency: 32 },
    reconcileIntervalMs: 0,
  });
  try {
    await timeRuns(engine, 'seq20', 2, 1); // warm-up
    const seqMs = await timeRuns(engine, 'seq20', 10, 1);
    // A workflow step here is 21 nodes per run (the sequence and its 20 leaves); report per leaf step.
    const msPerStep = seqMs / (10 * 20);
    const concMs = await timeRuns(engine, 'seq5', 100, 50);
    const stepsPerSecond = (100 * 5) / (concMs / 1000);
    console.log(
      `${name.padEnd(10)} sequential: ${msPerStep.toFixed(2)} ms/step   concurrent (50 runs × 5 steps): ${stepsPerSecond.toFixed(0)} steps/s`,
    );
    return { msPerStep, stepsPerSecond };
  } finally {
    await engine.close();
  }
}

async function rawCommitMs(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('create temporary table bench_raw (id serial primary key, body text)');
  const n = 500;
  const started = performance.now();
  for (let i = 0; i < n; i++) await client.query('insert into bench_raw (body) values ($1)', [`step ${i}`]);
  const ms = (performance.now() - started) / n;
  await client.end();
  return ms;
}

let server: LocalServer | undefined;
const dir = mkdtempSync(join(tmpdir(), 'agentloom-bench-'));
chmodSync(dir, 0o755);
try {
  let url = process.env.DATABASE_URL;
  if (!url) {
    server = await startLocalPostgres(join(dir, 'pg'));
    url = server.url;
  }
  const baseline = await rawCommitMs(url);
  console.log(`baseline   one raw Postgres commit: ${baseline.toFixed(2)} ms`);
  const lite = await measure('pglite', { pglite: join(dir, 'lite') });
  const postgres = await measure('postgres', url);
  console.log(
    `ratios     postgres step / raw commit: ${(postgres.msPerStep / baseline).toFixed(1)}×   pglite step / postgres step: ${(lite.msPerStep / postgres.msPerStep).toFixed(2)}×`,
  );
} finally {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
}
