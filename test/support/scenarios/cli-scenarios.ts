/**
 * The client commands of the CLI (`run`, `status`, `events --follow`, `approve`, `reject`, `respond`, `cancel`,
 * `retry`) run as real processes against a running server — `agentloom dev`, or `agentloom api` with workers — on
 * the apps of test/e2e/fixtures/cli-apps.ts, each with its exit code asserted (0 completed / ok, 1 failed or
 * cancelled or refused, 2 bad usage, 3 paused); `status ID` exits with its run's code (0 completed or running,
 * 1 failed or cancelled, 3 paused), checked for a run in each of those states.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Event } from '../../../src/index.js';
import { runCli, show, type CliResult } from '../processes/cli.js';
import { waitFor } from '../assert/wait-for.js';

/** Where the CLI finds the server. */
export interface CliTarget {
  url: string;
  /** The key the server wants (sent as AGENTLOOM_API_KEY), if it wants one. */
  apiKey?: string;
}

/**
 * Runs `agentloom ...args` against `target`: the URL as `--url`, or with `viaEnv` as AGENTLOOM_URL (and the key
 * always as AGENTLOOM_API_KEY).
 */
async function cli(target: CliTarget, args: string[], { viaEnv = false } = {}): Promise<CliResult> {
  return runCli(viaEnv ? args : [...args, '--url', target.url], {
    env: { AGENTLOOM_API_KEY: target.apiKey, ...(viaEnv ? { AGENTLOOM_URL: target.url } : {}) },
  });
}

/** Asserts the exit code, showing the whole result when it differs. */
function expectExit(result: CliResult, code: number): CliResult {
  expect(result.code, show(result)).toBe(code);
  return result;
}

/** An error is one plain line on stderr, never a stack trace. */
function expectPlainError(result: CliResult, pattern: RegExp): void {
  expect(result.stderr, show(result)).toMatch(pattern);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
}

/** The call id an `approve:` / `respond:` hint line names for `id`. */
function hintedCall(stdout: string, command: 'approve' | 'respond', id: string): string {
  const match = new RegExp(`${command}: npx agentloom ${command} (\\S+) (\\S+)`).exec(stdout);
  expect(match?.[1], stdout).toBe(id);
  return match?.[2] as string;
}

function headersOf(target: CliTarget): Record<string, string> {
  return target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {};
}

/** run (no --follow) → events --follow (3) → status → approve --payload → events --follow (0); answers again. */
export async function approveScenario(t: CliTarget): Promise<void> {
  const run = expectExit(await cli(t, ['run', 'mail', 'mail bob']), 0);
  const id = run.stdout.trim();
  expect(id, show(run)).toMatch(/^inv_[\w-]+$/);

  const paused = expectExit(await cli(t, ['events', id, '--follow']), 3);
  expect(paused.stdout).toMatch(/#\s*\d+ mailer: → send_mail\(\{"to":"bob"\}\)/);
  expect(paused.stdout).toContain('paused: waiting for 1 call');
  const callId = hintedCall(paused.stdout, 'approve', id);

  // `status` exits with the run's code: 3 paused.
  const status = expectExit(await cli(t, ['status', id]), 3);
  const lines = status.stdout.split('\n');
  expect(lines[0]).toBe(`invocation ${id}  app mail  status paused`);
  expect(lines).toContain('  mailer  llm  paused  attempt 1');
  expect(lines).toContain(`pending confirmation ${callId}: send_mail({"to":"bob"}) at mailer`);

  const approve = expectExit(await cli(t, ['approve', id, callId, '--payload', '{"note":"ok"}']), 0);
  // Running again, or (a quick worker) done already.
  expect(approve.stdout).toContain(`approved ${callId}; ${id} is `);
  expect(approve.stdout).toMatch(/ is (running|completed) — follow it: npx agentloom events /);
  const done = expectExit(await cli(t, ['events', id, '--follow']), 0);
  expect(done.stdout).toContain('mailer: ← send_mail: {"to":"bob","sent":true,"payload":{"note":"ok"}}');
  expect(done.stdout).toContain('completed: mail sent with {"note":"ok"}');
  const completed = expectExit(await cli(t, ['status', id]), 0);
  expect(completed.stdout).toContain(`invocation ${id}  app mail  status completed`);

  // The same answer again is a no-op; a different one is refused (409): exit 1 with one plain line.
  expectExit(await cli(t, ['approve', id, callId, '--payload', '{"note":"ok"}']), 0);
  expectPlainError(expectExit(await cli(t, ['reject', id, callId]), 1), /^agentloom: CONFLICT: /);
}

/** run --follow (3) → reject → events --follow (0): the tool did not run. URL from AGENTLOOM_URL. */
export async function rejectScenario(t: CliTarget): Promise<void> {
  const run = expectExit(
    await cli(t, ['run', 'mail', 'mail ann', '--user', 'ann', '--follow'], { viaEnv: true }),
    3,
  );
  const id = /^invocation (\S+) {2}app mail {2}session \S+$/m.exec(run.stdout)?.[1] as string;
  expect(id, show(run)).toBeDefined();
  const callId = hintedCall(run.stdout, 'approve', id);
  expect(run.stdout).toContain(`reject:  npx agentloom reject ${id} ${callId}`);

  const reject = expectExit(await cli(t, ['reject', id, callId], { viaEnv: true }), 0);
  expect(reject.stdout).toContain(`rejected ${callId}`);
  const done = expectExit(await cli(t, ['events', id, '--follow'], { viaEnv: true }), 0);
  expect(done.stdout).toContain('completed: mail not sent: This tool call is rejected.');
  expect(done.stdout).not.toMatch(/"sent":true/);
}

/** A long-running call: run --follow (3) → respond ID CALL JSON → events --follow (0). */
export async function respondScenario(t: CliTarget): Promise<void> {
  const run = expectExit(await cli(t, ['run', 'ticket', 'open a ticket', '--follow']), 3);
  const id = /^invocation (\S+)/m.exec(run.stdout)?.[1] as string;
  expect(run.stdout).toMatch(/long_running of open_ticket\(\{\}\) at desk/);
  const callId = hintedCall(run.stdout, 'respond', id);

  // Not a JSON object: bad usage, nothing sent.
  const notObject = expectExit(await cli(t, ['respond', id, callId, '[1]']), 2);
  expectPlainError(notObject, /the response must be a JSON object/);
  const respond = expectExit(await cli(t, ['respond', id, callId, '{"status":"done","ticket":42}']), 0);
  expect(respond.stdout).toContain(`answered ${callId}`);
  const done = expectExit(await cli(t, ['events', id, '--follow']), 0);
  expect(done.stdout).toContain('completed: ticket answered: {"status":"done","ticket":42}');
}

/** cancel reaches a running tool: events --follow exits 1, status shows cancelled; cancelling again is ok. */
export async function cancelScenario(t: CliTarget): Promise<void> {
  const id = expectExit(await cli(t, ['run', 'waiter', 'wait']), 0).stdout.trim();
  // The tool runs once the model's call to it is stored.
  await waitFor(
    async () => {
      const page = (await (
        await fetch(`${t.url}/v1/invocations/${id}/events`, { headers: headersOf(t) })
      ).json()) as { events: Event[] };
      return page.events.some((e) =>
        e.content?.parts.some((p) => p.functionCall?.name === 'wait_for_cancel'),
      );
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'the waiter to call its tool' },
  );
  // Still running (its tool waits for the cancel): `status` exits 0, nothing has gone wrong yet.
  const running = expectExit(await cli(t, ['status', id]), 0);
  expect(running.stdout).toMatch(
    new RegExp(`^invocation ${id} {2}app waiter {2}status (queued|running)$`, 'm'),
  );
  const cancel = expectExit(await cli(t, ['cancel', id]), 0);
  expect(cancel.stdout.trim()).toBe(`cancelled ${id}`);
  const follow = expectExit(await cli(t, ['events', id, '--follow']), 1);
  expect(follow.stdout.trim().split('\n').at(-1)).toBe('cancelled');
  const status = expectExit(await cli(t, ['status', id]), 1);
  expect(status.stdout).toContain(`invocation ${id}  app waiter  status cancelled`);
  expect(status.stdout).toContain('  waiter  llm  cancelled');
  expectExit(await cli(t, ['cancel', id]), 0);
}

/** A failed run: run --follow (1) → retry → events --follow (0); then cancel and retry are refused (1). */
export async function retryScenario(t: CliTarget): Promise<void> {
  const input = `fail once ${randomUUID()}`;
  const run = expectExit(await cli(t, ['run', 'flaky', input, '--follow']), 1);
  const id = /^invocation (\S+)/m.exec(run.stdout)?.[1] as string;
  expect(run.stdout).toMatch(/^failed: MODEL_ERROR: .*fails the first time/m);
  const failed = expectExit(await cli(t, ['status', id]), 1);
  expect(failed.stdout).toContain(`invocation ${id}  app flaky  status failed`);

  const retry = expectExit(await cli(t, ['retry', id]), 0);
  expect(retry.stdout).toMatch(new RegExp(`^retrying ${id}; ${id} is (running|completed) — `));
  const done = expectExit(await cli(t, ['events', id, '--follow']), 0);
  expect(done.stdout).toContain(`completed: answered on a retry: ${input}`);

  expectPlainError(
    expectExit(await cli(t, ['cancel', id]), 1),
    /had already ended \(completed\): nothing to cancel/,
  );
  expectPlainError(
    expectExit(await cli(t, ['retry', id]), 1),
    /^agentloom: CONFLICT: only failed or cancelled/,
  );
}

/** Bad usage exits 2 naming what to write; an unknown invocation or app, or no server, exits 1. */
export async function usageScenario(t: CliTarget, closedPortUrl: string): Promise<void> {
  const missing = expectExit(await cli(t, ['approve', 'inv_x']), 2);
  expect(missing.stderr).toContain("error: missing required argument 'call'");
  expect(missing.stderr).toContain('Usage: agentloom approve [options] <id> <call>');
  const unknown = expectExit(await cli(t, ['run', 'mail', 'x', '--bogus']), 2);
  expect(unknown.stderr).toContain("error: unknown option '--bogus'");
  expectPlainError(
    expectExit(await cli(t, ['approve', 'inv_x', 'c', '--payload', '{bad']), 2),
    /--payload must be JSON/,
  );
  expectPlainError(
    expectExit(await cli(t, ['events', 'inv_x', '--after', 'soon']), 2),
    /--after must be a whole number/,
  );

  expectPlainError(
    expectExit(await cli(t, ['status', 'inv_missing']), 1),
    /^agentloom: NOT_FOUND: .*inv_missing/,
  );
  expectPlainError(expectExit(await cli(t, ['run', 'no_such_app', 'x']), 1), /^agentloom: NOT_FOUND: /);
  const down = expectExit(await runCli(['status', 'inv_x', '--url', closedPortUrl]), 1);
  expectPlainError(
    down,
    /^agentloom: UNAVAILABLE: cannot reach the agentloom API at http:\/\/127\.0\.0\.1:\d+ /,
  );
}
