/**
 * DBOS Transact: the same workloads as workflows of `DBOS.runStep` steps, its system database on the same
 * server (database `dbos_sys`, pool of 20 like agentloom's). Workflows run in this process, started by calling
 * the registered workflow function (durable: DBOS records the workflow and every step's output before going on).
 * W3: the 50 sleeping steps are started together in the workflow (Promise.all, in a deterministic order), then
 * a join step.
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import type { BenchContext } from '../context.js';
import { repeat, sleep, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { createDatabase } from '../services.js';

const W1_STEPS = 20;
const W2_STEPS = 5;
const W3_BRANCHES = 50;
const W3_SLEEP_MS = 200;

async function emit(i: number): Promise<{ text: string }> {
  return { text: `done s${i}` };
}

const sequence = DBOS.registerWorkflow(
  async (steps: number): Promise<number> => {
    for (let i = 0; i < steps; i++) await DBOS.runStep(() => emit(i), { name: `s${i}` });
    return steps;
  },
  { name: 'sequence' },
);

const fanOut = DBOS.registerWorkflow(
  async (branches: number): Promise<number> => {
    await Promise.all(
      Array.from({ length: branches }, (_, i) =>
        DBOS.runStep(
          async () => {
            await sleep(W3_SLEEP_MS);
            return { text: 'slept' };
          },
          { name: `b${i}` },
        ),
      ),
    );
    await DBOS.runStep(() => emit(branches), { name: 'join' });
    return branches;
  },
  { name: 'fan_out' },
);

/** Runs W1–W3 on DBOS. */
export async function runDbos(ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const url = await createDatabase(ctx.postgresUrl, 'dbos_sys');
  DBOS.setConfig({
    name: 'agentloom-bench',
    systemDatabaseUrl: url,
    systemDatabasePoolSize: 20,
    logLevel: 'error',
  });
  await DBOS.launch();
  const counters = await PgCounters.open(ctx.postgresUrl, 'dbos_sys');
  const result: SuiteResult = {
    suite: 'dbos',
    label: 'DBOS Transact (workflow of runStep steps)',
    kind: 'peer',
    figures: {},
    counts: {},
    errors: [],
  };
  const opts = { warmup: scale.warmup, runs: scale.runs };
  try {
    let window = await counters.begin();
    const w1Opts = { ...opts, runs: scale.w1Runs };
    result.figures.w1 = await repeat(
      { ...w1Opts, unit: 'ms/step', note: 'a workflow of 20 steps' },
      async () => {
        const started = performance.now();
        await sequence(W1_STEPS);
        return (performance.now() - started) / W1_STEPS;
      },
    );
    (result.counts as Record<string, unknown>).w1 = await counters.end(
      window,
      (w1Opts.warmup + w1Opts.runs) * W1_STEPS,
    );
    window = await counters.begin();
    result.figures.w2 = await repeat(
      { ...opts, unit: 'steps/s', note: `${scale.w2Invocations} concurrent workflows of 5 steps` },
      async () => {
        const started = performance.now();
        await Promise.all(Array.from({ length: scale.w2Invocations }, () => sequence(W2_STEPS)));
        return (scale.w2Invocations * W2_STEPS) / ((performance.now() - started) / 1000);
      },
    );
    (result.counts as Record<string, unknown>).w2 = await counters.end(
      window,
      (opts.warmup + opts.runs) * scale.w2Invocations * W2_STEPS,
    );
    result.figures.w3 = await repeat(
      { ...opts, unit: 'ms', note: '50 parallel steps of 200 ms, then a join step' },
      async () => {
        const started = performance.now();
        await fanOut(W3_BRANCHES);
        return performance.now() - started;
      },
    );
  } finally {
    await counters.close();
    await DBOS.shutdown();
  }
  return result;
}
