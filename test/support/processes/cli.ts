/**
 * The CLI as tests run it: real `node bin/agentloom.js …` processes. `runCli` runs a client command to its end
 * (asynchronously: the server it talks to may live in the test process); `ServerProcess` keeps a long-running one
 * (`dev`, `api`) with its output for assertions, and is SIGKILLed after the file if a test left it running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll } from 'vitest';
import { waitFor } from '../assert/wait-for.js';

export const REPO = resolve(import.meta.dirname, '../../..');
export const CLI = join(REPO, 'bin/agentloom.js');

/** A free TCP port on loopback (released just before the server binds it). */
export { freePort } from '../services/local-services.js';

/** Variables of the test process that would change what a spawned CLI does; removed unless a test sets them. */
const INHERITED = [
  'DATABASE_URL',
  'REDIS_URL',
  'PORT',
  'LOG_LEVEL',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'AGENTLOOM_APPS',
  'AGENTLOOM_URL',
  'AGENTLOOM_API_KEY',
  'AGENTLOOM_API_KEYS',
  'AGENTLOOM_SECRET_KEY',
  'AGENTLOOM_QUEUE_PREFIX',
  'AGENTLOOM_LEASE_MS',
];

/** The environment of a spawned CLI: this process's, without agentloom's variables, plus `env`. */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  for (const key of INHERITED) delete out[key];
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/** What a finished CLI process left. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `agentloom ...args` to its end (SIGKILL after `timeoutMs`). */
export async function runCli(
  args: string[],
  { env = {}, timeoutMs = 90_000 }: { env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: cliEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((done) => child.once('close', (c) => done(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Describes a result for an assertion message. */
export function show(result: CliResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}

const running = new Set<ChildProcess>();

/** Signals a detached child's whole process group (ignoring one that is gone). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

afterAll(async () => {
  const left = [...running];
  for (const child of left) signalGroup(child, 'SIGKILL');
  await Promise.all(left.map((child) => new Promise((done) => child.once('exit', done))));
});
process.on('exit', () => {
  for (const child of running) signalGroup(child, 'SIGKILL');
});

/** A long-running CLI process (`dev`, `api`) whose output is kept. */
export class ServerProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    args: string[],
    env: Record<string, string | undefined> = {},
    command: string[] = [CLI],
    { cwd = REPO }: { cwd?: string } = {},
  ) {
    const [file, ...rest] = command[0] === CLI ? [process.execPath, CLI] : command;
    this.child = spawn(file as string, [...rest, ...args], {
      cwd,
      env: cliEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: `npm start` runs node under a shell, and a stop must reach all of them.
      detached: true,
    });
    running.add(this.child);
    this.child.stdout?.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((done) =>
      this.child.once('exit', (code, signal) => {
        running.delete(this.child);
        this.exit = { code, signal };
        done(this.exit);
      }),
    );
  }

  /** Everything it printed so far, for failure messages. */
  get output(): string {
    return `--- stdout\n${this.stdout}\n--- stderr\n${this.stderr}`;
  }

  /** Waits until stdout matches `pattern`; fails at once (with the output) if the process exits first. */
  async waitForOutput(
    pattern: RegExp,
    { timeoutMs = 90_000, what = String(pattern) } = {},
  ): Promise<RegExpExecArray> {
    try {
      return await waitFor(
        () => {
          const match = pattern.exec(this.stdout);
          if (match) return match;
          if (this.exit) throw new Error(`exited ${JSON.stringify(this.exit)} before printing ${what}`);
          return undefined;
        },
        { timeoutMs, intervalMs: 50, what },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${this.output}`);
    }
  }

  /** Sends `signal` to its process group and waits for it to exit. */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.exit) signalGroup(this.child, signal);
    return this.exited;
  }
}
