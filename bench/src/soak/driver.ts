/**
 * The soak's steady load, through the HTTP API as a service and its reviewers would drive it: every second a
 * writer run (approved 2–4 s after it pauses; one in five rejected), and on a rotation a chore that completes, a
 * chore whose tool throws, a chore whose model throws (the run fails), a writer run cancelled while it waits for
 * its approval (every other one retried, then approved), and a slow chore cancelled while its tool runs. Each run
 * is followed until it ends; what it should end as is known when it starts.
 */
import { percentile } from '../measure.js';

export type Final = 'completed' | 'failed' | 'cancelled';

/** One run the driver started. */
export interface TrackedRun {
  id: string;
  kind: string;
  /** What it must end as; `completed|cancelled` when a cancel raced the run's own end. */
  expected: Final[];
  startedAt: number;
  endedAt?: number;
  final?: string;
  /** Pending call ids already answered (or scheduled). */
  answered: Set<string>;
  /** Cancel once paused (then, when `retry`, retry and approve). */
  cancelWhenPaused?: boolean;
  retry?: boolean;
  retried?: boolean;
}

interface InvocationBody {
  status: string;
  pending?: { callId: string; kind: string }[];
}

/** The API client of the soak. */
class Api {
  constructor(private readonly base: string) {}

  async post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`${this.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  }

  async get(path: string): Promise<{ status: number; json: InvocationBody }> {
    const res = await fetch(`${this.base}${path}`);
    return { status: res.status, json: (await res.json().catch(() => ({}))) as InvocationBody };
  }
}

/** Drives the load and follows every run; `stop()` ends the load, `settle()` waits for the runs to end. */
export class Driver {
  readonly runs: TrackedRun[] = [];
  readonly errors: string[] = [];
  private readonly api: Api;
  private tick = 0;
  private loadTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(baseUrl: string) {
    this.api = new Api(baseUrl);
  }

  start(): void {
    this.loadTimer = setInterval(() => void this.startTick().catch((err) => this.fail('start', err)), 1_000);
    this.pollTimer = setInterval(() => void this.poll(), 1_000);
  }

  /** Ends the load (the runs already started are still followed). */
  stopLoad(): void {
    clearInterval(this.loadTimer);
  }

  /** Waits until every run ended (or `timeoutMs`), then stops following. */
  async settle(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.runs.some((r) => r.final === undefined) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    clearInterval(this.pollTimer);
    for (const timer of this.timers) clearTimeout(timer);
  }

  /** End-to-end latency (ms) of the runs that ended in [from, to) without a human in the loop. */
  latencies(from: number, to: number): { p50: number; p99: number; n: number } {
    const values = this.runs
      .filter(
        (r) => r.kind.startsWith('chore') && r.endedAt !== undefined && r.endedAt >= from && r.endedAt < to,
      )
      .map((r) => (r.endedAt as number) - r.startedAt);
    if (values.length === 0) return { p50: Number.NaN, p99: Number.NaN, n: 0 };
    return { p50: percentile(values, 50), p99: percentile(values, 99), n: values.length };
  }

  private fail(what: string, err: unknown): void {
    this.errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }

  private later(ms: number, work: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      work().catch((err) => this.fail('answer', err));
    }, ms);
    this.timers.add(timer);
  }

  private async enqueue(app: string, input: string, run: Omit<TrackedRun, 'id' | 'startedAt' | 'answered'>) {
    const startedAt = Date.now();
    const res = await this.api.post(`/v1/apps/${app}/invocations`, {
      userId: `soak-${this.tick % 7}`,
      input,
    });
    if (res.status !== 202) throw new Error(`enqueue ${app}: ${res.status} ${JSON.stringify(res.json)}`);
    const tracked: TrackedRun = { ...run, id: String(res.json.invocationId), startedAt, answered: new Set() };
    this.runs.push(tracked);
    return tracked;
  }

  private async startTick(): Promise<void> {
    const t = ++this.tick;
    await this.enqueue('writer', `Write post ${t}`, { kind: 'writer', expected: ['completed'] });
    if (t % 3 === 0) await this.enqueue('chores', `tidy ${t}`, { kind: 'chore', expected: ['completed'] });
    if (t % 5 === 0)
      await this.enqueue('chores', `flaky ${t}`, { kind: 'chore-flaky', expected: ['completed'] });
    if (t % 10 === 0)
      await this.enqueue('chores', `broken ${t}`, { kind: 'chore-broken', expected: ['failed'] });
    if (t % 7 === 0) {
      const retry = t % 14 === 0;
      await this.enqueue('writer', `Write post ${t} (cancelled)`, {
        kind: retry ? 'writer-cancel-retry' : 'writer-cancel',
        expected: [retry ? 'completed' : 'cancelled'],
        cancelWhenPaused: true,
        retry,
      });
    }
    if (t % 6 === 0) {
      const run = await this.enqueue('chores', `slow ${t}`, { kind: 'slow-cancel', expected: ['cancelled'] });
      this.later(700, async () => {
        const res = await this.api.post(`/v1/invocations/${run.id}/cancel`, {});
        // A run that already ended is left as it is (200, with its status): then it ends as it did. (A cancel
        // that came after the 2-s tool, e.g. when a heap snapshot froze the api, was counted a wrong end.)
        if (res.status !== 200 || res.json.status !== 'cancelled') run.expected = ['completed', 'cancelled'];
      });
    }
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const open = this.runs.filter((r) => r.final === undefined);
      for (let i = 0; i < open.length; i += 16) {
        await Promise.all(open.slice(i, i + 16).map((run) => this.follow(run)));
      }
    } catch (err) {
      this.fail('poll', err);
    } finally {
      this.polling = false;
    }
  }

  private async follow(run: TrackedRun): Promise<void> {
    const res = await this.api.get(`/v1/invocations/${run.id}`);
    if (res.status !== 200) {
      this.fail('get', new Error(`${run.id}: ${res.status}`));
      return;
    }
    const { status, pending = [] } = res.json;
    // Cancelled on purpose, to be retried in a moment: not its end.
    if (run.retry && !run.retried && run.answered.has('cancel')) return;
    if (status === 'completed' || status === 'failed' || status === 'cancelled') {
      run.final = status;
      run.endedAt = Date.now();
      return;
    }
    if (status !== 'paused') return;
    if (run.cancelWhenPaused && !run.retried) {
      if (run.answered.has('cancel')) return;
      run.answered.add('cancel');
      const cancelled = await this.api.post(`/v1/invocations/${run.id}/cancel`, {});
      if (cancelled.status !== 200) throw new Error(`cancel ${run.id}: ${cancelled.status}`);
      if (run.retry) {
        this.later(1_000, async () => {
          const retried = await this.api.post(`/v1/invocations/${run.id}/retry`, {});
          if (retried.status !== 200) throw new Error(`retry ${run.id}: ${retried.status}`);
          run.retried = true;
        });
      } else {
        run.final = 'cancelled';
        run.endedAt = Date.now();
      }
      return;
    }
    for (const call of pending) {
      if (run.answered.has(call.callId)) continue;
      run.answered.add(call.callId);
      const confirmed = !(this.runs.indexOf(run) % 5 === 4);
      this.later(2_000 + Math.random() * 2_000, async () => {
        const answer = await this.api.post(`/v1/invocations/${run.id}/confirmations/${call.callId}`, {
          confirmed,
        });
        if (answer.status !== 200) throw new Error(`confirm ${run.id}: ${answer.status}`);
      });
    }
  }
}

/** Runs whose end differs from what they should have ended as, and runs that never ended. */
export function endState(runs: TrackedRun[]): {
  started: number;
  byKind: Record<string, Record<string, number>>;
  wrong: { id: string; kind: string; expected: Final[]; final: string | undefined }[];
  stuck: number;
} {
  const byKind: Record<string, Record<string, number>> = {};
  const wrong: { id: string; kind: string; expected: Final[]; final: string | undefined }[] = [];
  let stuck = 0;
  for (const run of runs) {
    const final = run.final ?? 'unfinished';
    const kind = (byKind[run.kind] ??= {});
    kind[final] = (kind[final] ?? 0) + 1;
    if (run.final === undefined) stuck++;
    else if (!(run.expected as string[]).includes(run.final))
      wrong.push({ id: run.id, kind: run.kind, expected: run.expected, final: run.final });
  }
  return { started: runs.length, byKind, wrong, stuck };
}
