/**
 * The client commands start fast: they speak HTTP only, so they must load no server, database, queue or
 * model module. Each is run as a user would (bin/agentloom.js: the build when it is current, else the sources) with
 * a loader hook that records every module the process resolves, against an API that is not there. A chunk of the
 * CLI bundle (dist/cli/, scripts/bundle-cli.ts) stands for the sources esbuild put in it (its meta.json).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cliEnv, freePort, REPO } from '../support/processes/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Packages and source folders of the server side. */
const SERVER_SIDE = [
  /\/node_modules\/(pg|pg-pool|pg-protocol|bullmq|ioredis|fastify|@fastify|drizzle-orm|@electric-sql|openai|@anthropic-ai|@google|@modelcontextprotocol|@a2a-js|pino|prom-client|@opentelemetry\/sdk-node)\//,
  /\/(src|dist\/src)\/(store|queue|workers|models|agents\/(workflow|remote)|api\/(routes|adk|a2a|server)|engine\/(step|apps|auth|engine|create-engine))[/.]/,
];

/** The sources each chunk of the CLI bundle holds (repo-relative path → inputs), when there is a bundle. */
function bundleInputs(): Map<string, string[]> {
  const meta = join(REPO, 'dist/cli/meta.json');
  if (!existsSync(meta)) return new Map();
  const { outputs } = JSON.parse(readFileSync(meta, 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return new Map(Object.entries(outputs).map(([file, o]) => [file, Object.keys(o.inputs)]));
}

/** A resolved module URL, or for a chunk of the bundle the sources in it (as `file:///…/path` URLs). */
function expand(url: string, chunks: Map<string, string[]>): string[] {
  if (!url.startsWith('file:')) return [url];
  const inputs = chunks.get(relative(REPO, fileURLToPath(url)));
  return inputs ? [url, ...inputs.map((input) => `file://${join(REPO, input)}`)] : [url];
}

const COMMANDS: string[][] = [
  ['run', 'writer', 'hello'],
  ['status', 'inv_x'],
  ['events', 'inv_x'],
  ['approve', 'inv_x', 'call_x'],
  ['reject', 'inv_x', 'call_x'],
  ['respond', 'inv_x', 'call_x', '{"ok":true}'],
  ['cancel', 'inv_x'],
  ['retry', 'inv_x'],
  ['auth', 'inv_x', 'call_x', '--token', 't'],
  ['credentials', 'list', '--user', 'u'],
  ['fork', 'inv_x', '--at', 'root/a'],
  ['replay', 'inv_x'],
  ['diff', 'inv_x', 'inv_y'],
];

describe('client commands load no server-side module', () => {
  it.each(COMMANDS)('agentloom %s …', async (...args) => {
    const port = await freePort(); // nothing listens there
    const log = join(dir, `${args[0]}.log`);
    const result = spawnSync(
      process.execPath,
      [
        '--import',
        join(REPO, 'test/support/processes/record-modules.mjs'),
        CLI,
        ...args,
        '--url',
        `http://127.0.0.1:${port}`,
      ],
      { cwd: REPO, env: cliEnv({ MODULE_LOG: log }), encoding: 'utf8', timeout: 60_000 },
    );
    expect(result.stderr).toContain('cannot reach the agentloom API');
    const chunks = bundleInputs();
    const resolved = new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean));
    const modules = [...new Set([...resolved].flatMap((url) => expand(url, chunks)))];
    expect(modules.some((m) => /\/cli\/client\//.test(m))).toBe(true);
    const serverSide = modules.filter((m) => SERVER_SIDE.some((pattern) => pattern.test(m)));
    expect(serverSide).toEqual([]);
  });
});
