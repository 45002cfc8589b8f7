/**
 * A kagent folder whose workflow subagents have `url`s (reference 001's SubagentConfig):
 * examples/kagent-remote validates, and runs end to end on `agentloom dev`, started by a `curl` child process with a
 * `message/send` at kagent's path `/api/a2a/{namespace}/{name}`; its two steps are apps of a second `agentloom dev`
 * (the example's remote-apps.ts), which ran each once.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, REPO, runCli, show } from '../support/processes/cli.js';
import { DEV_START_MS, DevProcesses, invocationCount } from '../support/processes/a2a-dev.js';

const EXAMPLE = join(REPO, 'examples/kagent-remote');
const REGISTRY = join(EXAMPLE, 'scripted-models.ts');
const devs = new DevProcesses();
afterAll(() => devs.stopAll());

/** The example's manifests, their remote URLs pointed at `remote` instead of the example's port 8081. */
function manifestsFor(remote: string): string {
  const dir = join(devs.dir, 'manifests');
  mkdirSync(dir);
  for (const file of readdirSync(EXAMPLE).filter((f) => f.endsWith('.yaml'))) {
    const text = readFileSync(join(EXAMPLE, file), 'utf8');
    writeFileSync(join(dir, file), text.replaceAll('http://127.0.0.1:8081', remote));
  }
  return dir;
}

describe('a kagent workflow of remote agents (url subagents)', () => {
  it(
    'validates, and runs end to end from curl at /api/a2a/{namespace}/{name} on dev',
    async () => {
      const validated = await runCli(['validate', EXAMPLE, '--registry', REGISTRY]);
      expect(validated.code, show(validated)).toBe(0);
      expect(validated.stdout).toContain('1 app: review-pipeline (4 agents');

      const remote = await devs.start(await freePort(), {
        apps: join(EXAMPLE, 'remote-apps.ts'),
        data: 'remote',
      });
      const { url } = await devs.start(await freePort(), {
        apps: manifestsFor(remote.url),
        args: ['--registry', REGISTRY],
      });
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'fib' }] },
          configuration: { blocking: true },
        },
      });
      const curl = await promisify(execFile)(
        'curl',
        [
          '-sS',
          '--fail-with-body',
          `${url}/api/a2a/kagent/review-pipeline`,
          '-H',
          'content-type: application/json',
          '-d',
          body,
        ],
        { timeout: 120_000 },
      );
      const answer = JSON.parse(curl.stdout) as {
        result: { id: string; status: { state: string }; artifacts: { parts: { text?: string }[] }[] };
      };
      expect(answer.result.status.state).toBe('completed');
      expect(answer.result.artifacts[0]?.parts[0]?.text).toBe('fib is exponential: memoise it');
      // Our run, through /v1 of the first dev; the remote dev ran each of its apps once.
      const run = (await (await fetch(`${url}/v1/invocations/${answer.result.id}`)).json()) as {
        status: string;
      };
      expect(run.status).toBe('completed');
      expect(await invocationCount(remote.url, 'drafts')).toBe(1);
      expect(await invocationCount(remote.url, 'review')).toBe(1);
    },
    DEV_START_MS * 2 + 120_000,
  );
});
