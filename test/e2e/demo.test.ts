/** `npm run demo` (`agentloom demo`), the scripted offline walk-through: a real process, no servers, no API key. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('agentloom demo', () => {
  it('runs the reference pipeline offline: branches, loop exit, a confirmation pause answered, completed', () => {
    const env = { ...process.env };
    delete env.GEMINI_API_KEY;
    delete env.GOOGLE_API_KEY;
    delete env.DATABASE_URL;
    const result = spawnSync(process.execPath, ['bin/agentloom.js', 'demo', '--data', join(dir, 'data')], {
      encoding: 'utf8',
      env,
      timeout: 90_000,
    });
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.status).toBe(0);
    const out = result.stdout;
    expect(out).toContain('scripted models (offline)');
    expect(out).toMatch(/\[research\.0\] research_web: /);
    expect(out).toMatch(/\[research\.1\] research_docs: /);
    expect(out).toMatch(/critic: → exit_loop/);
    expect(out).toMatch(/paused: confirmation of publish_post/);
    expect(out).toMatch(/publisher: ← publish_post: \{"url"/);
    expect(out).toContain('status: completed');
    expect(out).toMatch(/writer_pipeline\/refine\s+completed\s+\{"exitedBy":"escalation"/);
  });
});
