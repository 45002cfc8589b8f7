/**
 * Retention (`createEngine({ retention })`, `AGENTLOOM_RETENTION`, `agentloom prune`): ended runs older than a
 * window are deleted in small batches (store/repos/prune.ts says what goes with a run). Workers prune in the
 * background, one process at a time (an advisory lock), a bounded number of batches per pass with a breath between
 * batches, so pruning never competes with steps for long.
 */
import type { Logger } from 'pino';
import { AgentloomError } from '../../core/errors.js';
import { parseDuration } from '../../config/duration.js';
import {
  addPruneCounts,
  countPrunable,
  NO_PRUNE_COUNTS,
  PRUNABLE_STATUSES,
  pruneBatch,
  type PruneCounts,
  type PruneCriteria,
  type PrunableStatus,
} from '../../store/repos/prune.js';
import type { Db } from '../../store/db/database.js';

export type { PruneCounts, PrunableStatus } from '../../store/repos/prune.js';

/** What `engine.prune` deletes. */
export interface PruneOptions {
  /** Runs ended longer ago than this: a duration (`30d`, `12h`) or ms. */
  olderThan: string | number;
  /** Only this app's runs. */
  app?: string;
  /** Only runs in these statuses (default completed, failed and cancelled; never a live run). */
  statuses?: readonly PrunableStatus[];
  /** Count what would go, delete nothing. */
  dryRun?: boolean;
  /** Runs per batch (one transaction each). Default 200. */
  batchSize?: number;
}

/** The background retention of an engine's workers. */
export interface RetentionOptions {
  /** Runs ended longer ago than this are deleted: a duration (`30d`) or ms. */
  olderThan: string | number;
  /** Only runs in these statuses (default: every ended status). */
  statuses?: readonly PrunableStatus[];
  /** How often a worker looks for runs to delete. Default: a tenth of `olderThan`, between 1 s and 5 minutes. */
  intervalMs?: number;
  /** Runs per batch. Default 200. */
  batchSize?: number;
  /** Batches per pass at most (the rest waits for the next pass). Default 50. */
  maxBatchesPerPass?: number;
}

/** `createEngine({ retention })`: a duration (`'30d'`), or the options. */
export type RetentionSetting = string | RetentionOptions;

const DEFAULT_BATCH = 200;

/**
 * The criteria of `options`, checked: a clear VALIDATION error naming the field (as `names` calls it: the CLI's
 * flags) and what to write.
 */
export function pruneCriteria(
  options: Pick<PruneOptions, 'olderThan' | 'app' | 'statuses'>,
  names: { olderThan: string; statuses: string } = { olderThan: 'olderThan', statuses: 'statuses' },
): PruneCriteria {
  const olderThanMs =
    typeof options.olderThan === 'number'
      ? options.olderThan
      : parseDuration(options.olderThan, names.olderThan);
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new AgentloomError(
      'VALIDATION',
      `${names.olderThan}: must be a duration such as 30d, or a number of ms ≥ 0`,
      { details: { field: names.olderThan } },
    );
  }
  for (const status of options.statuses ?? []) {
    if (!(PRUNABLE_STATUSES as readonly string[]).includes(status)) {
      throw new AgentloomError(
        'VALIDATION',
        `${names.statuses}: "${status}" cannot be pruned; choose among ${PRUNABLE_STATUSES.join(', ')} (a queued, running or paused run is never deleted)`,
        { details: { field: names.statuses } },
      );
    }
  }
  return {
    olderThanMs,
    ...(options.app === undefined ? {} : { app: options.app }),
    ...(options.statuses === undefined ? {} : { statuses: options.statuses }),
  };
}

/** Deletes (or with `dryRun` counts) the runs `options` name, batch after batch until none is left. */
export async function pruneRuns(db: Db, options: PruneOptions): Promise<PruneCounts> {
  const criteria = pruneCriteria(options);
  if (options.dryRun) return countPrunable(db, criteria);
  const limit = positive(options.batchSize ?? DEFAULT_BATCH, 'batchSize');
  const total: PruneCounts = { ...NO_PRUNE_COUNTS };
  for (;;) {
    const { counts } = await pruneBatch(db, criteria, { limit, lock: 'wait' });
    addPruneCounts(total, counts);
    if (counts.invocations < limit) return total;
  }
}

function positive(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new AgentloomError('VALIDATION', `${field}: must be a whole number ≥ 1`, { details: { field } });
  }
  return value;
}

/** The resolved background retention. */
export interface Retention {
  criteria: PruneCriteria;
  intervalMs: number;
  batchSize: number;
  maxBatchesPerPass: number;
}

/** Resolves `createEngine({ retention })` / AGENTLOOM_RETENTION. */
export function resolveRetention(setting: RetentionSetting): Retention {
  const options: RetentionOptions = typeof setting === 'string' ? { olderThan: setting } : setting;
  const criteria = pruneCriteria(options);
  const fallbackInterval = Math.min(300_000, Math.max(1_000, Math.floor(criteria.olderThanMs / 10)));
  return {
    criteria,
    intervalMs: positive(options.intervalMs ?? fallbackInterval, 'retention.intervalMs'),
    batchSize: positive(options.batchSize ?? DEFAULT_BATCH, 'retention.batchSize'),
    maxBatchesPerPass: positive(options.maxBatchesPerPass ?? 50, 'retention.maxBatchesPerPass'),
  };
}

/**
 * One background pass: batches until none is left, `maxBatchesPerPass` is reached, or another process holds the
 * prune lock (it is pruning; this pass leaves it the work). Reports each batch's deletions to `onPruned`.
 */
export async function retentionPass(
  db: Db,
  retention: Retention,
  onPruned: (counts: PruneCounts) => void,
): Promise<PruneCounts> {
  const total: PruneCounts = { ...NO_PRUNE_COUNTS };
  for (let batch = 0; batch < retention.maxBatchesPerPass; batch++) {
    const { locked, counts } = await pruneBatch(db, retention.criteria, {
      limit: retention.batchSize,
      lock: 'skip',
    });
    if (!locked) break;
    if (counts.invocations > 0) onPruned(counts);
    addPruneCounts(total, counts);
    if (counts.invocations < retention.batchSize) break;
    // A breath between batches: steps waiting on the same tables go first.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return total;
}

/** Runs {@link retentionPass} every `intervalMs` (never two at once in a process); `stop()` ends it. */
export function startRetention(
  db: Db,
  retention: Retention,
  logger: Logger,
  onPruned: (counts: PruneCounts) => void,
): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    retentionPass(db, retention, onPruned)
      .then((total) => {
        if (total.invocations > 0) logger.info({ pruned: total }, 'retention pruned ended runs');
      })
      .catch((err: unknown) => logger.warn({ err }, 'retention pass failed; the next pass tries again'))
      .finally(() => (running = false));
  }, retention.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
