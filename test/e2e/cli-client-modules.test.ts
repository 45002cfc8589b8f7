/**
 * The client commands start fast (issue 33): they speak HTTP only, so they must load no server, database, queue or
 * model module. Each is run as a user would (bin/agentloom.js: the build when it is current, else the sources) with
 * a loader hook that records every module the process resolves, against an API that is not there.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cliEnv, freePort, REPO } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'agentloom-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Packages and source folders of the server side. */
const SERVER_SIDE = [
  /\/node_modules\/(pg|pg-pool|pg-protocol|bullmq|ioredis|fastify|@fastify|drizzle-orm|@electric-sql|openai|@anthropic-ai|@google|@modelcontextprotocol|@a2a-js|pino|prom-client|@opentelemetry\/sdk-node)\//,
  /\/(src|dist\/src)\/(store|queue|workers|models|agents\/(workflow|remote)|api\/(routes|adk|a2a|server)|engine\/(step|apps|auth|engine|create-engine))[/.]/,
];

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
        join(REPO, 'test/support/record-modules.mjs'),
        CLI,
        ...args,
        '--url',
        `http://127.0.0.1:${port}`,
      ],
      { cwd: REPO, env: cliEnv({ MODULE_LOG: log }), encoding: 'utf8', timeout: 60_000 },
    );
    expect(result.stderr).toContain('cannot reach the agentloom API');
    const modules = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
    expect(modules.some((m) => /\/cli\/client\//.test(m))).toBe(true);
    const serverSide = modules.filter((m) => SERVER_SIDE.some((pattern) => pattern.test(m)));
    expect(serverSide).toEqual([]);
  });
});
