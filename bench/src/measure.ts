/**
 * Measuring helpers shared by every suite: the result types written to results.json, repeated runs after a
 * warm-up summarised as median / min / max, percentiles, and a wall clock with sub-millisecond resolution.
 */

/** Median, min and max of repeated runs, plus every sample (in run order). */
export interface Summary {
  median: number;
  min: number;
  max: number;
  samples: number[];
}

/**
 * One figure of one system on one workload. Merged over rounds (rounds.ts): `median` is the median of the
 * rounds' medians, `min`/`max` their range, `rounds` each round's median in order, `samples` every run.
 */
export interface Figure extends Summary {
  unit: string;
  /** Each round's median, in round order (absent in a single-round result). */
  rounds?: number[];
  /** The round each entry of `rounds` is from (a failed round has no entry); absent in older results: 1, 2, … */
  roundNumbers?: number[];
  /** What one sample is (e.g. "one invocation of 20 steps, ms per step"). */
  note?: string;
}

/** Database counters over a measured window, per step (see pg-counters.ts). */
export interface CountsPerStep {
  steps: number;
  statements: number;
  /** Statements other than BEGIN / COMMIT / ROLLBACK / SAVEPOINT / RELEASE. */
  statementsWithoutTxControl: number;
  /** Commit records in the WAL: transactions that wrote something. */
  writeTransactions: number;
  /** WAL bytes written. */
  walBytes: number;
  /** Execution time of all statements (pg_stat_statements total_exec_time; an autocommit's WAL flush is not in it). */
  serverMs: number;
  /** xact_commit of pg_stat_database (read-only ones included), when measured (needs a stats flush wait). */
  commits?: number;
  /** wal_sync of pg_stat_wal (fsyncs of the WAL), when measured. */
  walSyncs?: number;
  /** The statements by calls per step, most frequent first. */
  topStatements: { query: string; callsPerStep: number; meanMs: number; totalMsPerStep: number }[];
}

/** A figure's key: a workload, or W2 on n worker processes (the scaling suite, `w2x4`). */
export type FigureKey = 'w1' | 'w2' | 'w3' | `w2x${number}`;

/** What a suite writes: its figures by workload, counters, extra results, and errors. */
export interface SuiteResult {
  suite: string;
  label: string;
  kind: 'agentloom' | 'peer' | 'floor' | 'extra';
  figures: Partial<Record<FigureKey, Figure>>;
  counts?: Partial<Record<string, CountsPerStep>>;
  extra?: Record<string, unknown>;
  errors: string[];
  /** Seconds the suite took, set by the orchestrator (all rounds together once merged). */
  seconds?: number;
  /** The round this result is of (1-based), set by the orchestrator on a single round's result. */
  round?: number;
  /** Once merged over rounds: each round's figures, errors and seconds (rounds.ts). */
  roundResults?: (Pick<SuiteResult, 'round' | 'figures' | 'errors' | 'seconds'> & { warmup?: true })[];
}

/** Sorted copy. */
function sorted(values: number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The p-th percentile (0–100) by nearest rank. */
export function percentile(values: number[], p: number): number {
  const s = sorted(values);
  if (s.length === 0) return Number.NaN;
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank] as number;
}

/** Median / min / max of `samples`. */
export function summarize(samples: number[]): Summary {
  const s = sorted(samples);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median, min: s[0] ?? Number.NaN, max: s[s.length - 1] ?? Number.NaN, samples };
}

/** Wall-clock milliseconds since the epoch with sub-ms resolution (comparable across processes on one host). */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Resolves after `ms`, early (with no error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Runs `once` `warmup` times unmeasured, then `runs` times, and summarises what each measured call returned
 * (a figure in `unit`). Each call returns its own figure, so a run may measure whatever its workload means.
 */
export async function repeat(
  options: { warmup: number; runs: number; unit: string; note?: string },
  once: () => Promise<number>,
): Promise<Figure> {
  for (let i = 0; i < options.warmup; i++) await once();
  const samples: number[] = [];
  for (let i = 0; i < options.runs; i++) samples.push(await once());
  return { ...summarize(samples), unit: options.unit, note: options.note };
}

/** Milliseconds `work` took. */
export async function timeMs(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** Polls `check` every `intervalMs` until it returns a value other than undefined/false; throws after timeout. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}`);
    await sleep(options.intervalMs ?? 50);
  }
}

/** The message of an error, for results.json. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
