/**
 * `agentloom prune`: deletes ended runs older than a window, straight in the database (like `migrate`: an
 * operator's command, no API needed). Never a queued, running or paused run; a session goes with its last run.
 */
import { AgentloomError } from '../core/errors.js';
import { loadEnv } from '../config/env.js';
import type { PruneCounts, PrunableStatus } from '../engine/runs/retention.js';

/** The flags of `agentloom prune`. */
export interface PruneFlags {
  olderThan: string;
  app?: string;
  status?: string;
  dryRun?: boolean;
  batchSize?: string;
  database?: string;
  data?: string;
}

/** Runs `agentloom prune`; prints what went (or would go) and returns the exit code. */
export async function runPrune(flags: PruneFlags): Promise<number> {
  const url = flags.database ?? loadEnv().DATABASE_URL;
  if (!url && !flags.data) {
    throw new AgentloomError(
      'CONFIG',
      'prune needs a database: set DATABASE_URL, or pass --database postgres://… or --data DIR',
    );
  }
  const statuses = flags.status
    ?.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '') as PrunableStatus[] | undefined;
  const batchSize = flags.batchSize === undefined ? undefined : Number(flags.batchSize);
  const { pruneRuns, pruneCriteria } = await import('../engine/runs/retention.js');
  // Checked before the database is opened: a typo costs nothing.
  pruneCriteria(
    { olderThan: flags.olderThan, ...(statuses ? { statuses } : {}) },
    { olderThan: '--older-than', statuses: '--status' },
  );
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1)) {
    throw new AgentloomError(
      'VALIDATION',
      '--batch-size: must be a whole number ≥ 1, e.g. --batch-size 200',
      {
        details: { field: '--batch-size' },
      },
    );
  }
  const { openDatabase } = await import('../store/index.js');
  const database = await openDatabase(flags.data ? { pglite: flags.data } : (url as string));
  try {
    const counts = await pruneRuns(database.db, {
      olderThan: flags.olderThan,
      ...(flags.app === undefined ? {} : { app: flags.app }),
      ...(statuses ? { statuses } : {}),
      ...(flags.dryRun ? { dryRun: true } : {}),
      ...(batchSize === undefined ? {} : { batchSize }),
    });
    console.log(`${flags.dryRun ? 'prune --dry-run: would delete' : 'prune: deleted'} ${describe(counts)}`);
    return 0;
  } finally {
    await database.close();
  }
}

function describe(counts: PruneCounts): string {
  const parts: [number, string][] = [
    [counts.invocations, 'run'],
    [counts.sessions, 'session'],
    [counts.events, 'event'],
    [counts.nodes, 'node'],
    [counts.toolRequests, 'tool request'],
    [counts.artifacts, 'artifact'],
  ];
  return parts.map(([n, noun]) => `${n} ${noun}${n === 1 ? '' : 's'}`).join(', ');
}
