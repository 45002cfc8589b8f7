/**
 * The scaling suite: W2 on PostgreSQL + BullMQ/Redis with 1, 2 and 4 `agentloom worker` processes
 * (Scale.scalingWorkers), each count on a fresh database with its own workers. Per count: steps/s (the figure
 * `w2x<n>`, a median of `runs` runs after a warm-up run), and over the measured runs the database's statements
 * and write transactions per step, Redis commands per step (INFO stats), and the CPU time per step of each
 * process group (the workers, the bench process that enqueues and waits, PostgreSQL's backends, Redis) and of the
 * whole machine (/proc/stat): multiplied by steps/s they say which resource runs out as workers are added.
 *
 * Round 1 also profiles one worker at saturation (1 worker process, W2): a worker started with `--cpu-prof`, its
 * samples cut to one W2 run (CPU profile timestamps are CLOCK_MONOTONIC, like `process.hrtime` here).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { BenchContext } from '../context.js';
import { repeat, type SuiteResult } from '../measure.js';
import { PgCounters } from '../pg-counters.js';
import { W2_STEPS } from './apps.js';
import { openMode } from './modes.js';
import { summarizeProfile, type Profile, type ProfileSummary } from './profile.js';
import { w2 } from './workloads.js';

/** CPU milliseconds so far of each process group, and the machine's busy and total milliseconds. */
interface CpuSnapshot {
  workers: number;
  bench: number;
  postgres: number;
  redis: number;
  machineBusy: number;
  machineTotal: number;
}

/** What one worker count measured (round 1 of the suite's rounds is reported beside the merged figures). */
export interface ScalingPoint {
  workers: number;
  steps: number;
  stepsPerSecond: number;
  statementsPerStep: number;
  writeTransactionsPerStep: number;
  redisCommandsPerStep: number;
  /** CPU ms per step by process group, and the machine's busy share (0–1) during the runs. */
  cpuMsPerStep: { workers: number; bench: number; postgres: number; redis: number };
  machineBusy: number;
  cores: number;
}

const TICK_MS = 10; // USER_HZ = 100 on Linux

function ticksOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
}

/** The pids whose parent is `ppid` (PostgreSQL's backends are the postmaster's children). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function machineTicks(): { busy: number; total: number; cores: number } {
  const text = readFileSync('/proc/stat', 'utf8');
  const cpu = (text.split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  const cores = text.split('\n').filter((l) => /^cpu\d+ /.test(l)).length;
  return { busy: total - idle, total, cores };
}

function cpuSnapshot(ctx: BenchContext, workerPids: number[]): CpuSnapshot {
  const usage = process.cpuUsage();
  const machine = machineTicks();
  const sum = (pids: number[]): number => pids.reduce((s, pid) => s + ticksOf(pid), 0) * TICK_MS;
  return {
    workers: sum(workerPids),
    bench: (usage.user + usage.system) / 1000,
    // Exited backends' time is lost; the pools keep theirs open through the window.
    postgres: sum([ctx.postgresPid, ...childrenOf(ctx.postgresPid)]),
    redis: sum([ctx.redisPid]),
    machineBusy: (machine.busy * TICK_MS) / machine.cores,
    machineTotal: (machine.total * TICK_MS) / machine.cores,
  };
}

async function redisCommands(redis: Redis): Promise<number> {
  const info = await redis.info('stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}

/** One worker count: warm-up, measured runs inside the counters. */
async function point(
  ctx: BenchContext,
  workers: number,
  result: SuiteResult,
  redis: Redis,
): Promise<ScalingPoint> {
  const { scale } = ctx;
  const target = await openMode('pg-redis-1', ctx, { workers, database: `al_scaling_${workers}` });
  const counters = await PgCounters.open(ctx.postgresUrl, target.database as string);
  try {
    await w2(target.engine, scale.w2Invocations);
    const pids = target.workers.map((w) => w.pid);
    const window = await counters.begin();
    const commandsBefore = await redisCommands(redis);
    const before = cpuSnapshot(ctx, pids);
    const started = performance.now();
    const figure = await repeat(
      {
        warmup: 0,
        runs: scale.runs,
        unit: 'steps/s',
        note: `${scale.w2Invocations} concurrent invocations of 5 leaves, ${workers} worker process(es)`,
      },
      () => w2(target.engine, scale.w2Invocations),
    );
    const wallMs = performance.now() - started;
    const after = cpuSnapshot(ctx, pids);
    const commands = (await redisCommands(redis)) - commandsBefore;
    const steps = scale.runs * scale.w2Invocations * W2_STEPS;
    const counts = await counters.end(window, steps);
    result.figures[`w2x${workers}`] = figure;
    const per = (key: keyof CpuSnapshot): number => (after[key] - before[key]) / steps;
    return {
      workers,
      steps,
      stepsPerSecond: steps / (wallMs / 1000),
      statementsPerStep: counts.statements,
      writeTransactionsPerStep: counts.writeTransactions,
      redisCommandsPerStep: commands / steps,
      cpuMsPerStep: {
        workers: per('workers'),
        bench: per('bench'),
        postgres: per('postgres'),
        redis: per('redis'),
      },
      machineBusy:
        (after.machineBusy - before.machineBusy) / Math.max(1, after.machineTotal - before.machineTotal),
      cores: machineTicks().cores,
    };
  } finally {
    await counters.close();
    await target.close();
  }
}

/** A CPU profile of one worker process (the only one) during one W2 run, after a warm-up run. */
async function profileWorker(ctx: BenchContext): Promise<ProfileSummary> {
  const dir = join(ctx.workDir, 'cpu-prof');
  const target = await openMode('pg-redis-1', ctx, {
    workers: 0,
    database: 'al_scaling_profile',
  });
  try {
    const worker = await target.spawnWorker?.({
      nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '500'],
    });
    if (!worker) throw new Error('no worker to profile');
    await w2(target.engine, ctx.scale.w2Invocations);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    await w2(target.engine, ctx.scale.w2Invocations);
    const toUs = Number(process.hrtime.bigint() / 1000n);
    await worker.stop(); // the profile is written as the worker exits
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file)
      throw new Error(`worker ${worker.pid} wrote no CPU profile (log: ${worker.log().slice(-500)})`);
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    return summarizeProfile(profile, { fromUs, toUs });
  } finally {
    await target.close();
  }
}

/** Runs the scaling suite (one round). */
export async function runScaling(ctx: BenchContext): Promise<SuiteResult> {
  const result: SuiteResult = {
    suite: 'scaling-redis',
    label: 'agentloom, PostgreSQL + BullMQ/Redis, W2 on 1, 2, 4 worker processes',
    kind: 'agentloom',
    figures: {},
    errors: [],
  };
  const redis = new Redis(ctx.redisUrl);
  const points: ScalingPoint[] = [];
  try {
    for (const workers of ctx.scale.scalingWorkers) points.push(await point(ctx, workers, result, redis));
    result.extra = { points };
    if (ctx.round === 1) {
      try {
        result.extra.workerProfile = await profileWorker(ctx);
      } catch (err) {
        result.extra.workerProfileError = (err as Error).message;
      }
    }
  } finally {
    redis.disconnect();
  }
  return result;
}
