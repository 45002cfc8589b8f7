/**
 * Where a step's round trips go, counted (not timed, so it holds on a noisy machine): one W1 run and one W2 run
 * of a PostgreSQL mode, each inside a window that counts
 *
 * - PostgreSQL statements (pg_stat_statements of the mode's database; the report classifies them by their text:
 *   enqueue, claim, step commit, wait's reads, the queue's own statements in the PostgreSQL-only mode, BEGIN /
 *   COMMIT; an EXECUTE of the engine's batches by the statement it runs). Statements are not round trips: the
 *   engine sends a batch of EXECUTEs as one;
 * - Redis commands (Redis modes): every command Redis executes, seen through MONITOR between two marker
 *   commands, by the process that sent it (the bench process — producer and `wait` — or a worker process,
 *   found by the client's TCP port among each process's sockets) and by name (an EVALSHA by the BullMQ script it
 *   runs, found by the SHA1 of the scripts of the bench's bullmq, the same version as agentloom's); commands a
 *   Lua script runs inside Redis are counted apart (they are not round trips).
 *
 * MONITOR slows Redis down, so these runs are never the timed ones.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { BenchContext } from '../context.js';
import { waitFor } from '../measure.js';
import type { PgCounters } from '../pg-counters.js';
import { W1_STEPS, W2_STEPS } from './apps.js';
import type { ModeName, ModeTarget } from './modes.js';
import { w1, w2 } from './workloads.js';

/** Counts per step of one window. */
export interface RoundTripWindow {
  steps: number;
  /** PostgreSQL statements per step, by normalised text (the report classifies them: sections.ts). */
  statements: { query: string; callsPerStep: number }[];
  statementsTotal: number;
  /** Redis commands per step sent by each process ('bench process', 'workers', 'other'), round trips. */
  redisBySender?: Record<string, number>;
  /** Redis commands per step by name ('evalsha moveToActive', 'bzpopmin', …), sent by clients. */
  redisByCommand?: Record<string, number>;
  /** Commands per step run inside Lua scripts (not round trips). */
  redisInScripts?: number;
  redisTotal?: number;
}

/** What {@link roundTrips} reports for a mode. */
export interface RoundTrips {
  w1: RoundTripWindow;
  w2: RoundTripWindow;
}

let scriptNames: Map<string, string> | undefined;

/** SHA1 of each BullMQ Lua script → its name (how ioredis's EVALSHA names it). */
async function bullmqScripts(): Promise<Map<string, string>> {
  if (scriptNames) return scriptNames;
  const names = new Map<string, string>();
  const entry = createRequire(import.meta.url).resolve('bullmq');
  let dir = dirname(entry);
  while (!readdirSync(dir).includes('package.json')) dir = dirname(dir);
  const scripts = join(dir, 'dist/esm/scripts');
  for (const file of readdirSync(scripts).filter((f) => f.endsWith('.js') && f !== 'index.js')) {
    const mod = (await import(pathToFileURL(join(scripts, file)).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const s = value as { name?: string; content?: string };
      if (typeof s?.name === 'string' && typeof s.content === 'string')
        names.set(createHash('sha1').update(s.content).digest('hex'), s.name);
    }
  }
  scriptNames = names;
  return names;
}

/** Local TCP ports of the sockets `pid` holds (its fds → socket inodes → /proc/net/tcp*). */
function tcpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1] as string);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return new Set();
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9] as string))
        ports.add(parseInt((cols[1] as string).split(':')[1] as string, 16));
    }
  }
  return ports;
}

interface MonitorWindow {
  stop(): Promise<{ bySender: Map<string, number>; byCommand: Map<string, number>; inScripts: number }>;
}

/** Starts counting Redis commands (MONITOR) from a start marker to the stop marker. */
async function monitorRedis(redisUrl: string, workerPids: number[]): Promise<MonitorWindow> {
  const shas = await bullmqScripts();
  const token = `bench-window-${process.pid}-${Date.now()}`;
  const control = new Redis(redisUrl);
  const monitor = await control.duplicate().monitor();
  const bySender = new Map<string, number>();
  const byCommand = new Map<string, number>();
  let inScripts = 0;
  let state: 'before' | 'counting' | 'done' = 'before';
  const senders = new Map<number, string>();
  const add = (map: Map<string, number>, key: string): void => {
    map.set(key, (map.get(key) ?? 0) + 1);
  };
  const senderOf = (source: string): string => {
    const port = Number(source.split(':').pop());
    if (!senders.has(port)) {
      // New connection: look it up among the processes' sockets.
      if (tcpPortsOf(process.pid).has(port)) senders.set(port, 'bench process (producer, wait)');
      else if (workerPids.some((pid) => tcpPortsOf(pid).has(port))) senders.set(port, 'worker processes');
      else senders.set(port, 'other');
    }
    return senders.get(port) as string;
  };
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const name = (args[0] ?? '').toLowerCase();
    if (name === 'echo' && args[1] === `${token}-start`) return void (state = 'counting');
    if (name === 'echo' && args[1] === `${token}-stop`) return void (state = 'done');
    if (state !== 'counting' || name === 'monitor') return;
    if (source === 'lua') {
      inScripts++;
      return;
    }
    add(bySender, senderOf(source));
    const script = name === 'evalsha' ? shas.get(args[1] ?? '') : undefined;
    add(byCommand, name === 'evalsha' || name === 'eval' ? `${name} ${script ?? '(unknown script)'}` : name);
  });
  await control.echo(`${token}-start`);
  await waitFor(() => state === 'counting', { timeoutMs: 10_000, what: 'the MONITOR start marker' });
  return {
    async stop() {
      await control.echo(`${token}-stop`);
      await waitFor(() => state === 'done', { timeoutMs: 10_000, what: 'the MONITOR stop marker' });
      monitor.disconnect();
      control.disconnect();
      return { bySender, byCommand, inScripts };
    },
  };
}

const perStep = (map: Map<string, number>, steps: number): Record<string, number> =>
  Object.fromEntries([...map.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v / steps]));

async function countWindow(
  steps: number,
  run: () => Promise<unknown>,
  options: { counters: PgCounters; redisUrl: string | undefined; workerPids: number[] },
): Promise<RoundTripWindow> {
  const redis = options.redisUrl ? await monitorRedis(options.redisUrl, options.workerPids) : undefined;
  const window = await options.counters.begin();
  await run();
  const counts = await options.counters.end(window, steps, 200);
  const seen = await redis?.stop();
  const statements = counts.topStatements.map((s) => ({ query: s.query, callsPerStep: s.callsPerStep }));
  const result: RoundTripWindow = { steps, statements, statementsTotal: counts.statements };
  if (seen) {
    result.redisBySender = perStep(seen.bySender, steps);
    result.redisByCommand = perStep(seen.byCommand, steps);
    result.redisInScripts = seen.inScripts / steps;
    result.redisTotal = [...seen.bySender.values()].reduce((a, b) => a + b, 0) / steps;
  }
  return result;
}

/** Counts one W1 run and one W2 run of `mode` (after its measured runs: everything is warm). */
export async function roundTrips(args: {
  mode: ModeName;
  target: ModeTarget;
  counters: PgCounters;
  ctx: BenchContext;
}): Promise<RoundTrips> {
  const { mode, target, counters, ctx } = args;
  const options = {
    counters,
    redisUrl: mode.startsWith('pg-redis') ? ctx.redisUrl : undefined,
    workerPids: target.workers.map((w) => w.pid),
  };
  const invocations = ctx.scale.w2Invocations;
  return {
    w1: await countWindow(W1_STEPS, () => w1(target.engine), options),
    w2: await countWindow(invocations * W2_STEPS, () => w2(target.engine, invocations), options),
  };
}
