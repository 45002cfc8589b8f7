/**
 * What the soak samples every 10 s: each process's memory — RSS and its anonymous part (/proc), the V8 heap (used,
 * total, and the new, old and code spaces' sizes), external memory (ArrayBuffers, Buffers) and what is left outside both, the native part — its
 * active handles, the series of its /metrics page and its event-loop delay, the
 * step latency of the window (the workers' step histograms, differenced), the queue (runnable nodes in Postgres,
 * BullMQ's waiting jobs in Redis), runs by state, each table's rows, bytes and dead tuples, Redis memory.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type pg from 'pg';

/** A process the soak watches: its pid and where its Prometheus metrics are. */
export interface Watched {
  name: string;
  pid: number;
  metricsUrl: string;
}

export interface ProcessSample {
  rssMb: number;
  /** The anonymous part of the RSS (heap memory of V8 and of malloc; the rest is mapped files: code, libraries). */
  rssAnonMb: number;
  heapUsedMb: number;
  /** Memory V8 holds for its heap (used and free pages). */
  heapTotalMb: number;
  /** V8's new space (young objects; V8 grows it toward its maximum under a steady allocation rate). */
  newSpaceMb: number;
  /** V8's old space (objects that survived two collections): pages it holds. */
  oldSpaceMb: number;
  /** Of those, what objects occupy (live, or dead since the last collection): fragmentation is the difference. */
  oldSpaceUsedMb?: number;
  /** V8's code space (compiled code and bytecode live in the old space). */
  codeSpaceMb: number;
  /** Memory outside the V8 heap that V8 accounts for: ArrayBuffers, Buffers, strings of native modules. */
  externalMb: number;
  /**
   * Anonymous RSS minus the V8 heap and external memory: malloc'd memory nobody accounts for (native modules,
   * libuv, V8's own structures, malloc's free lists and fragmentation), thread stacks.
   */
  nativeMb: number;
  /** Handles libuv keeps (sockets, timers with a handle, servers). */
  activeHandles: number;
  /** Series on the /metrics page (a label with unbounded values would grow it). */
  metricSeries: number;
  eventLoopP99Ms: number;
}

export interface TableSample {
  rows: number;
  deadRows: number;
  mb: number;
}

export interface Sample {
  /** Seconds since the load started. */
  t: number;
  processes: Record<string, ProcessSample>;
  /** Step latency of this window (claim to commit, completed steps of every worker), ms. */
  stepP50Ms: number;
  stepP99Ms: number;
  steps: number;
  /** Run latency (enqueue to end) of the window's runs with no human in the loop, ms. */
  runP50Ms: number;
  runP99Ms: number;
  runnableNodes: number;
  queuedJobs: number;
  runs: Record<string, number>;
  tables: Record<string, TableSample>;
  redisMb: number;
}

type Buckets = Map<number, number>;

/** `name{labels} value` lines of a Prometheus text page (no validation: our own endpoints). */
function parseMetrics(text: string): { name: string; labels: string; value: number }[] {
  const out: { name: string; labels: string; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m) out.push({ name: m[1] as string, labels: m[2] ?? '', value: Number(m[3]) });
  }
  return out;
}

/** VmRSS and RssAnon of /proc/<pid>/status, in MB. */
function rss(pid: number): { rssMb: number; rssAnonMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  return { rssMb: kb('VmRSS'), rssAnonMb: kb('RssAnon') };
}

/** The quantile `q` of a cumulative histogram (upper bound of the bucket where it falls), in ms. */
function quantileMs(buckets: Buckets, q: number): number {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return Number.NaN;
  for (const le of bounds) if ((buckets.get(le) ?? 0) >= q * total) return le * 1000;
  return Number.NaN;
}

/** Takes the samples; keeps the previous histograms to difference them. */
export class Sampler {
  private previous: Buckets = new Map();

  constructor(
    private readonly watched: Watched[],
    private readonly db: pg.Pool,
    private readonly redis: Redis,
    private readonly queuePrefix: string,
  ) {}

  async sample(t: number, runLatency: { p50: number; p99: number }): Promise<Sample> {
    const processes: Record<string, ProcessSample> = {};
    const cumulative: Buckets = new Map();
    for (const w of this.watched) {
      const text = await (await fetch(w.metricsUrl)).text();
      const metrics = parseMetrics(text);
      const value = (name: string, labels = '') =>
        metrics.find((m) => m.name === name && m.labels.includes(labels))?.value ?? Number.NaN;
      const mb = (name: string, labels?: string) => value(name, labels) / 1024 / 1024;
      const memory = rss(w.pid);
      const heapTotalMb = mb('agentloom_nodejs_heap_size_total_bytes');
      const externalMb = mb('agentloom_nodejs_external_memory_bytes');
      processes[w.name] = {
        ...memory,
        heapUsedMb: mb('agentloom_nodejs_heap_size_used_bytes'),
        heapTotalMb,
        newSpaceMb: mb('agentloom_nodejs_heap_space_size_total_bytes', 'space="new"'),
        oldSpaceMb: mb('agentloom_nodejs_heap_space_size_total_bytes', 'space="old"'),
        oldSpaceUsedMb: mb('agentloom_nodejs_heap_space_size_used_bytes', 'space="old"'),
        codeSpaceMb: mb('agentloom_nodejs_heap_space_size_total_bytes', 'space="code"'),
        externalMb,
        nativeMb: memory.rssAnonMb - heapTotalMb - externalMb,
        activeHandles: value('agentloom_nodejs_active_handles_total'),
        metricSeries: metrics.length,
        eventLoopP99Ms: value('agentloom_nodejs_eventloop_lag_p99_seconds') * 1000,
      };
      for (const m of metrics) {
        if (m.name !== 'agentloom_step_duration_seconds_bucket' || !m.labels.includes('outcome="completed"'))
          continue;
        const le = /le="([^"]+)"/.exec(m.labels)?.[1];
        const bound = le === '+Inf' ? Infinity : Number(le);
        cumulative.set(bound, (cumulative.get(bound) ?? 0) + m.value);
      }
    }
    const window: Buckets = new Map();
    for (const [le, count] of cumulative) window.set(le, count - (this.previous.get(le) ?? 0));
    this.previous = cumulative;
    const runs = Object.fromEntries(
      (
        await this.db.query<{ status: string; n: string }>(
          'select status, count(*) as n from invocations group by status',
        )
      ).rows.map((r) => [r.status, Number(r.n)]),
    );
    const runnable = await this.db.query<{ n: string }>(
      "select count(*) as n from nodes where status = 'pending'",
    );
    const stats = (
      await this.db.query<{ relname: string; dead: string; bytes: string }>(
        `select relname, n_dead_tup as dead, pg_total_relation_size(relid) as bytes
         from pg_stat_user_tables where schemaname = 'public'`,
      )
    ).rows;
    const tables: Record<string, TableSample> = {};
    for (const r of stats) {
      // Exact row counts (the statistics' estimates lag by minutes); these tables stay small under retention.
      const counted = await this.db.query<{ n: string }>(`select count(*) as n from "${r.relname}"`);
      tables[r.relname] = {
        rows: Number(counted.rows[0]?.n ?? 0),
        deadRows: Number(r.dead),
        mb: Number(r.bytes) / 1024 / 1024,
      };
    }
    let queuedJobs = 0;
    for (const key of await this.redis.keys(`bull:${this.queuePrefix}-steps*:wait`)) {
      queuedJobs += await this.redis.llen(key);
    }
    const info = await this.redis.info('memory');
    const redisMb = Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN) / 1024 / 1024;
    return {
      t,
      processes,
      stepP50Ms: quantileMs(window, 0.5),
      stepP99Ms: quantileMs(window, 0.99),
      steps: window.get(Infinity) ?? 0,
      runP50Ms: runLatency.p50,
      runP99Ms: runLatency.p99,
      runnableNodes: Number(runnable.rows[0]?.n ?? 0),
      queuedJobs,
      runs,
      tables,
      redisMb,
    };
  }
}
