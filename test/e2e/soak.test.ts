/**
 * The soak's 1-minute version: `agentloom api` and two workers on PostgreSQL and Redis under the steady
 * mix (~110 runs of seven kinds), with retention at 20 s. Checks the end state only (no timing is asserted): every run ended as it should,
 * none is left unfinished, no API call failed, no process logged an error the mix does not provoke, and retention
 * deleted ended runs while the load ran.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO } from '../support/processes/cli.js';

const out = mkdtempSync(join(tmpdir(), 'agentloom-soak-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

interface SoakResult {
  samples: { t: number; tables: Record<string, { rows: number }>; runs: Record<string, number> }[];
  end: { started: number; wrong: unknown[]; stuck: number; byKind: Record<string, Record<string, number>> };
  driverErrors: string[];
  logErrors: Record<string, string[]>;
}

it(
  'a minute of the mix: every run ends as it should, and retention keeps the tables bounded',
  { timeout: 600_000 },
  async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'bench/src/soak/main.ts',
        '--minutes',
        '1',
        '--retention',
        '20s',
        '--no-charts',
        '--out',
        out,
      ],
      { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: undefined } },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, output).toBe(0);
    const result = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as SoakResult;
    expect(result.end.wrong, output).toEqual([]);
    expect(result.end.stuck).toBe(0);
    expect(result.driverErrors).toEqual([]);
    expect(Object.values(result.logErrors).flat()).toEqual([]);
    // The whole mix ran: each kind of run was started and ended as it should.
    expect(Object.keys(result.end.byKind).sort()).toEqual(
      [
        'chore',
        'chore-broken',
        'chore-flaky',
        'slow-cancel',
        'writer',
        'writer-cancel',
        'writer-cancel-retry',
      ].sort(),
    );
    expect(result.end.byKind['writer-cancel-retry']).toEqual({ completed: expect.any(Number) });
    // Retention ran: fewer runs are stored at the end than were started (the ended ones older than 20 s went).
    const last = result.samples.at(-1)!;
    expect(last.tables.invocations!.rows).toBeLessThan(result.end.started);
    expect(result.end.started).toBeGreaterThan(50);
    expect(readFileSync(join(out, 'SOAK.md'), 'utf8')).toContain('## End state');
  },
);
