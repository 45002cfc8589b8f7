/**
 * What the orchestrator hands each suite process (through BENCH_CONTEXT): the servers, the scale of the
 * workloads, and where to write the result. `quick` is a tiny scale for developing the suite, never reported.
 */
import { resolve } from 'node:path';

/** Sizes of the workloads and how often each is repeated. */
export interface Scale {
  name: 'full' | 'quick';
  /** Unmeasured runs before the measured ones. */
  warmup: number;
  /** Measured runs of W2 and W3 in each round (a round's figure is their median). */
  runs: number;
  /**
   * Measured runs of W1 in each round. A W1 run is one 20-step invocation (20–50 ms), so a few runs are at the
   * mercy of one scheduling hiccup; its median over many runs is cheap and steady.
   */
  w1Runs: number;
  /** Rounds of the comparison suites (`--rounds N` overrides): each round runs every one once, interleaved. */
  rounds: number;
  /**
   * Unmeasured rounds before them (`--warmup-rounds N` overrides), numbered 0, −1, …: the first processes of a
   * fresh server ran slower for every system (WAL segments and caches still cold), which no ratio should carry.
   */
  warmupRounds: number;
  /** Scaling suite: the numbers of `agentloom worker` processes W2 runs on. */
  scalingWorkers: number[];
  /** W1: leaves of the sequence. */
  w1Steps: number;
  /** W2: concurrent invocations and steps each. */
  w2Invocations: number;
  w2Steps: number;
  /** W3: parallel leaves, their sleep, and a join leaf after them. */
  w3Branches: number;
  w3SleepMs: number;
  /** W4: repetitions with the default lease, and with a short lease. */
  w4DefaultLeaseReps: number;
  w4ShortLeaseReps: number;
  w4ShortLeaseMs: number;
  /** W5: paused invocations measured, after this many unmeasured ones. */
  w5Paused: number;
  w5Warmup: number;
  /** W6: invocations followed, leaves each, and the pause of a leaf before it emits (spaces the events). */
  w6Invocations: number;
  w6Leaves: number;
  w6GapMs: number;
}

export const FULL: Scale = Object.freeze({
  name: 'full',
  warmup: 1,
  runs: 5,
  w1Runs: 15,
  rounds: 5,
  warmupRounds: 1,
  scalingWorkers: [1, 2, 4],
  w1Steps: 20,
  w2Invocations: 200,
  w2Steps: 5,
  w3Branches: 50,
  w3SleepMs: 200,
  w4DefaultLeaseReps: 2,
  w4ShortLeaseReps: 3,
  w4ShortLeaseMs: 2_000,
  w5Paused: 10_000,
  w5Warmup: 300,
  w6Invocations: 5,
  w6Leaves: 40,
  w6GapMs: 25,
});

export const QUICK: Scale = Object.freeze({
  ...FULL,
  name: 'quick',
  runs: 1,
  w1Runs: 3,
  rounds: 2,
  warmupRounds: 0,
  w2Invocations: 20,
  w4DefaultLeaseReps: 0,
  w4ShortLeaseReps: 1,
  w5Paused: 100,
  w5Warmup: 20,
  w6Invocations: 1,
});

/** What a suite process receives. */
export interface BenchContext {
  /** URL of the `postgres` database of the benchmark server (superuser). */
  postgresUrl: string;
  redisUrl: string;
  scale: Scale;
  /** Where the suite writes its SuiteResult as JSON. */
  resultFile: string;
  /** A scratch directory for this suite (PGlite data, worker logs). */
  workDir: string;
  /**
   * Which round this is (1-based; a warm-up round is 0 or below) of how many: once-only work (slow counters,
   * profiles) runs in round 1.
   */
  round: number;
  rounds: number;
  /** Process ids of the benchmark's PostgreSQL postmaster and Redis server (for their CPU time). */
  postgresPid: number;
  redisPid: number;
}

/** The repository root (agentloom's sources, bin/agentloom.js). */
export const REPO = resolve(import.meta.dirname, '../..');
/** The bench package. */
export const BENCH = resolve(import.meta.dirname, '..');
/** The apps module the agentloom worker processes load. */
export const APPS_MODULE = resolve(import.meta.dirname, 'agentloom/apps.ts');

/** The context of this suite process. */
export function suiteContext(): BenchContext {
  const raw = process.env.BENCH_CONTEXT;
  if (!raw) throw new Error('BENCH_CONTEXT is not set: suites are started by bench/src/main.ts');
  return JSON.parse(raw) as BenchContext;
}
