/**
 * Entry of one suite process: `node --import tsx src/suite.ts <suite>` with BENCH_CONTEXT set by main.ts. Each
 * system runs in a process of its own (no shared JIT state, pools or globals such as DBOS's between systems; a
 * peer that fails cannot take the others down). Writes its SuiteResult to the context's result file.
 */
import { writeFileSync } from 'node:fs';
import type { ModeName } from './agentloom/modes.js';
import { suiteContext, type BenchContext } from './context.js';
import type { SuiteResult } from './measure.js';

/** Every suite, by name, in the order main.ts runs them. */
export const SUITES: Readonly<Record<string, (ctx: BenchContext) => Promise<SuiteResult>>> = {
  'floor-commit': async (ctx) => (await import('./peers/floors.js')).runCommitFloor(ctx),
  'floor-bullmq': async (ctx) => (await import('./peers/floors.js')).runBullmqFloor(ctx, false),
  'floor-bullmq-upsert': async (ctx) => (await import('./peers/floors.js')).runBullmqFloor(ctx, true),
  dbos: async (ctx) => (await import('./peers/dbos.js')).runDbos(ctx),
  langgraph: async (ctx) => (await import('./peers/langgraph.js')).runLangGraph(ctx),
  'agentloom-pglite': (ctx) => mode('pglite', ctx),
  'agentloom-pg-local': (ctx) => mode('pg-local', ctx),
  'agentloom-pg-redis-1': (ctx) => mode('pg-redis-1', ctx),
  'agentloom-pg-redis-2': (ctx) => mode('pg-redis-2', ctx),
  'agentloom-pg-pgqueue-1': (ctx) => mode('pg-pgqueue-1', ctx),
  'scaling-redis': async (ctx) => (await import('./agentloom/scaling.js')).runScaling(ctx),
  w4: async (ctx) => (await import('./agentloom/takeover.js')).runTakeover(ctx),
  w5: async (ctx) => (await import('./agentloom/paused.js')).runPaused(ctx),
  w6: async (ctx) => (await import('./agentloom/follow.js')).runFollow(ctx),
  tracing: async (ctx) => (await import('./agentloom/tracing.js')).runTracing(ctx),
};

async function mode(name: ModeName, ctx: BenchContext): Promise<SuiteResult> {
  return (await import('./agentloom/suite.js')).runModeSuite(name, ctx);
}

async function main(): Promise<void> {
  const name = process.argv[2] ?? '';
  const run = SUITES[name];
  if (!run) throw new Error(`unknown suite "${name}"; suites: ${Object.keys(SUITES).join(', ')}`);
  const ctx = suiteContext();
  const result = await run(ctx);
  writeFileSync(ctx.resultFile, JSON.stringify(result));
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
