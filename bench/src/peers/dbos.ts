/**
 * DBOS Transact: the same workloads as workflows of `DBOS.runStep` steps, its system database on the same
 * server (database `dbos_sys`, pool of 20 like agentloom's). Workflows run in this process, started by calling
 * the registered workflow function (durable: DBOS records the workflow and every step's output before going on).
 * W3: the 50 sleeping steps are started together in the workflow (Promise.all, in a deterministic order), then
 * a join step.
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import type { BenchContext } from '../context.js';
import { sleep, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { createDatabase } from '../services.js';
import { measureWorkloads, W3_SLEEP_MS } from './workloads.js';

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
  try {
    return await measureWorkloads(
      scale,
      { suite: 'dbos', label: 'DBOS Transact (workflow of runStep steps)', kind: 'peer' },
      {
        sequence: (steps) => sequence(steps),
        fanOut: (branches) => fanOut(branches),
        notes: {
          w1: 'a workflow of 20 steps',
          w2: `${scale.w2Invocations} concurrent workflows of 5 steps`,
          w3: '50 parallel steps of 200 ms, then a join step',
        },
      },
      counters,
    );
  } finally {
    await counters.close();
    await DBOS.shutdown();
  }
}
