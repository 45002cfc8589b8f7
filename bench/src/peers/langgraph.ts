/**
 * LangGraph JS with its PostgreSQL checkpointer (PostgresSaver over a pool of 20, database `langgraph`), with
 * `durability: 'async'` (LangGraph's default: a step's checkpoint is written while the next step runs; the
 * invocation returns after the last one is written). Each node appends one entry to a list channel (as a
 * message would be). W1: a chain of 20 nodes; W2: 200 concurrent invocations of a chain of 5 (a thread each);
 * W3: 50 nodes fanned out from START that sleep 200 ms, joined by one node.
 */
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { BenchContext } from '../context.js';
import { sleep, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { createDatabase } from '../services.js';
import { measureWorkloads, W1_STEPS, W2_STEPS, W3_BRANCHES, W3_SLEEP_MS } from './workloads.js';

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

type Update = { log: string[] };

/** The builder with node names as plain strings (the typed builder wants literal names). */
interface LooseGraph {
  addNode(name: string, action: () => Promise<Update>): LooseGraph;
  addEdge(from: string | string[], to: string): LooseGraph;
  compile(options: { checkpointer: PostgresSaver }): Runnable;
}

interface Runnable {
  invoke(
    input: Update,
    config: { configurable: { thread_id: string }; durability: 'async' | 'sync' | 'exit' },
  ): Promise<unknown>;
}

function builder(): LooseGraph {
  return new StateGraph(State) as unknown as LooseGraph;
}

function chain(steps: number, checkpointer: PostgresSaver): Runnable {
  const graph = builder();
  for (let i = 0; i < steps; i++) graph.addNode(`s${i}`, async () => ({ log: [`done s${i}`] }));
  graph.addEdge(START, 's0');
  for (let i = 1; i < steps; i++) graph.addEdge(`s${i - 1}`, `s${i}`);
  graph.addEdge(`s${steps - 1}`, END);
  return graph.compile({ checkpointer });
}

function fanOut(branches: number, checkpointer: PostgresSaver): Runnable {
  const graph = builder();
  const names = Array.from({ length: branches }, (_, i) => `b${i}`);
  for (const name of names) {
    graph.addNode(name, async () => {
      await sleep(W3_SLEEP_MS);
      return { log: [`slept ${name}`] };
    });
    graph.addEdge(START, name);
  }
  graph.addNode('join', async () => ({ log: ['joined'] }));
  graph.addEdge(names, 'join');
  graph.addEdge('join', END);
  return graph.compile({ checkpointer });
}

async function invoke(graph: Runnable): Promise<void> {
  await graph.invoke(
    { log: [] },
    { configurable: { thread_id: randomBytes(8).toString('hex') }, durability: 'async' },
  );
}

/** Runs W1–W3 on LangGraph + PostgresSaver. */
export async function runLangGraph(ctx: BenchContext): Promise<SuiteResult> {
  const { scale } = ctx;
  const url = await createDatabase(ctx.postgresUrl, 'langgraph');
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  const checkpointer = new PostgresSaver(pool);
  await checkpointer.setup();
  const counters = await PgCounters.open(ctx.postgresUrl, 'langgraph');
  const chains = new Map([W1_STEPS, W2_STEPS].map((steps) => [steps, chain(steps, checkpointer)]));
  const fan = fanOut(W3_BRANCHES, checkpointer);
  try {
    return await measureWorkloads(
      scale,
      { suite: 'langgraph', label: 'LangGraph JS + PostgresSaver (durability: async)', kind: 'peer' },
      {
        sequence: (steps) => invoke(chains.get(steps) as Runnable),
        fanOut: () => invoke(fan),
        notes: {
          w1: 'a chain of 20 nodes',
          w2: `${scale.w2Invocations} concurrent invocations of a chain of 5`,
          w3: '50 parallel nodes of 200 ms, then a join node',
        },
      },
      counters,
    );
  } finally {
    await counters.close();
    await pool.end();
  }
}
