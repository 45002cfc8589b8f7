/** `agentloom migrate` as an operator runs it: a real process against a real, empty PostgreSQL database. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createEmptyDatabase } from '../support/services/services.js';

function cli(args: string[], env: Record<string, string | undefined> = {}) {
  return spawnSync(process.execPath, ['bin/agentloom.js', ...args], {
    encoding: 'utf8',
    env: { ...process.env, DATABASE_URL: undefined, ...env },
    timeout: 60_000,
  });
}

describe('agentloom migrate', () => {
  it('creates the schema on an empty database, then reports it up to date', async () => {
    const url = await createEmptyDatabase();
    const first = cli(['migrate'], { DATABASE_URL: url });
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/migrate: applied 0000_init/);
    const second = cli(['migrate', '--database', url]);
    expect(second.status).toBe(0);
    expect(second.stdout).toContain('migrate: schema is up to date');
  });

  it('says what to do when no database is given', () => {
    const result = cli(['migrate']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/CONFIG: migrate needs a database: set DATABASE_URL/);
  });
});
