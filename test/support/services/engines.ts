/**
 * Engines for tests: the same suite runs on PGlite (in memory or on disk) and on PostgreSQL (a database cloned
 * from the migrated template for this file).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../../src/index.js';
import { createTestDatabase } from './services.js';

/** A storage backend a suite runs on. */
export interface Backend {
  name: 'pglite' | 'postgres';
  /** A fresh database target; PGlite directories are removed after the file. */
  target(): Promise<string | { pglite: string }>;
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new PGlite directory (removed after the file). */
export function pgliteDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentloom-engine-'));
  dirs.push(dir);
  return dir;
}

export const backends: Backend[] = [
  { name: 'pglite', target: async () => ({ pglite: pgliteDir() }) },
  { name: 'postgres', target: () => createTestDatabase() },
];

/** Creates an engine on a backend with quiet logs and a fast reconciler. */
export async function engineOn(backend: Backend, options: Omit<EngineOptions, 'database'>): Promise<Engine> {
  return createEngine({
    reconcileIntervalMs: 0,
    // Explicit, so an exported REDIS_URL never points two test files' engines at one shared queue.
    queue: 'local',
    logger: pino({ level: 'error' }),
    ...options,
    database: await backend.target(),
  });
}
