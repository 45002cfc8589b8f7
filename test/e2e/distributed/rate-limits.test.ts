/**
 * Rate limits shared by every worker. Three `agentloom worker` processes (concurrency 2
 * each: 6 slots) on PostgreSQL and Redis serve test/e2e/fixtures/rate-limit-apps.ts: `flood` on `openai/gpt-4.1`,
 * limited to 60 requests a minute for all workers together, and `other` on `openai/gpt-4.1-mini`, unlimited. Both
 * talk to one OpenAI-wire server in this process that timestamps every call. For 100 s the test keeps a backlog of
 * 20 `flood` runs (far more than the 6 worker slots), and:
 *
 * - rate: in no 10-second window (every window starting at a call, so sliding) does the server see more than 12
 *   `gpt-4.1` calls. The bound: 60/min is granted as 1 call per 1-second window (model-rate-limiter.ts
 *   `requestWindow`), so grants in any 10 s ≤ 10 + 1 (a window's burst); arrivals may be closer together than
 *   grants by the time a granted call takes to reach the server (well under 1 s), which adds at most one more.
 *   Without the limiter the 6 slots call as fast as the server answers: hundreds per window.
 * - no slot held: 12 `other` runs, enqueued 20 s in while 20 `flood` steps wait, all complete within 60 s.
 * - 429 storm: 70 s in, the server answers `gpt-4.1` calls with 429 and `retry-after: 6` for 1 s. After the first
 *   429, the server sees no `gpt-4.1` call from any worker from 1 s after it until 5 s after it (calls granted
 *   before the first 429 may still arrive within its first second), and every worker logs a retry-after wait.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../../support/processes/cli.js';
import { Cluster, fileServices, statusCounts, waitAllCompleted } from '../../support/processes/cluster.js';
import { chatCompletion, openaiError, startOpenAIWire } from '../../support/wire/openai-wire.js';
import type { RecordedRequest } from '../../support/wire/wire-server.js';

const RUN_MS = 100_000;
const BACKLOG = 20;
const STORM_AT_MS = 70_000;
const STORM_MS = 1_000;
const RETRY_AFTER_S = 6;
/** The most `gpt-4.1` calls any 10 s may hold (see the file comment). */
const MAX_PER_10S = 12;

/** A call of the limited model (the adapter sends the agent's id as it is, `openai/gpt-4.1`, or the bare name). */
const isLimited = (r: RecordedRequest) => r.body.model === 'openai/gpt-4.1' || r.body.model === 'gpt-4.1';

let stormFrom = Number.POSITIVE_INFINITY;
let firstStorm429: number | undefined;
const wire = await startOpenAIWire({
  fallback: (request) => {
    if (isLimited(request) && request.at >= stormFrom) {
      firstStorm429 ??= request.at;
      if (request.at < firstStorm429 + STORM_MS) {
        return openaiError(429, 'Rate limit reached for gpt-4.1', {
          type: 'requests',
          code: 'rate_limit_exceeded',
          headers: { 'retry-after': String(RETRY_AFTER_S) },
        });
      }
    }
    return chatCompletion({ text: 'ok', usage: { prompt: 20, completion: 2 } });
  },
});
afterAll(() => wire.close());

const { options, engine, db } = await fileServices({
  appsModule: join(REPO, 'test/e2e/fixtures/rate-limit-apps.ts'),
  concurrency: 2,
  leaseMs: 5_000,
  env: { OPENAI_BASE_URL: `${wire.url}/v1`, OPENAI_API_KEY: 'sk-test' },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const limitedCalls = (): RecordedRequest[] => wire.requests.filter(isLimited);

/** The most calls of `times` (sorted) within any window of `ms` starting at one of them. */
function maxInWindow(times: number[], ms: number): { count: number; from: number } {
  let best = { count: 0, from: 0 };
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + ms) end++;
    if (end - start > best.count) best = { count: end - start, from: times[start]! };
  }
  return best;
}

describe('rate limits across three workers', () => {
  it(
    'holds 60/min in every 10 s, lets another app through meanwhile, and backs every worker off a 429 storm',
    { timeout: 240_000 },
    async () => {
      const cluster = new Cluster(options);
      const workers = await cluster.start(3);
      const started = Date.now();
      const flood: string[] = [];
      let other: { ids: string[]; doneMs?: number; backlogAtDone?: number } | undefined;
      const enqueueFlood = async (n: number) => {
        for (let i = 0; i < n; i++) {
          const { invocationId } = await engine.enqueue({
            app: 'flood',
            userId: 'e2e',
            input: `flood ${flood.length}`,
          });
          flood.push(invocationId);
        }
      };
      const unfinished = async (ids: string[]) => {
        const counts = await statusCounts(db, ids);
        expect(counts.failed ?? 0).toBe(0);
        return ids.length - (counts.completed ?? 0);
      };
      await enqueueFlood(BACKLOG);
      // The run: top the backlog up every second; the other app at 20 s; the storm at 70 s.
      while (Date.now() - started < RUN_MS) {
        const elapsed = Date.now() - started;
        const backlog = await unfinished(flood);
        if (backlog < BACKLOG) await enqueueFlood(BACKLOG - backlog);
        if (!other && elapsed >= 20_000) {
          const ids: string[] = [];
          for (let i = 0; i < 12; i++) {
            ids.push(
              (await engine.enqueue({ app: 'other', userId: 'e2e', input: `other ${i}` })).invocationId,
            );
          }
          other = { ids };
          const enqueuedAt = Date.now();
          void waitAllCompleted(db, ids, 60_000).then(async () => {
            other!.doneMs = Date.now() - enqueuedAt;
            other!.backlogAtDone = await unfinished(flood);
          });
        }
        if (stormFrom === Number.POSITIVE_INFINITY && elapsed >= STORM_AT_MS) stormFrom = Date.now();
        await sleep(1_000);
      }
      // The backlog drains at the limit: 20 more calls, ~20 s.
      await waitAllCompleted(db, flood, 120_000);

      // Rate: every 10 s window.
      const times = limitedCalls()
        .map((r) => r.at)
        .sort((a, b) => a - b);
      expect(times.length).toBeGreaterThan(80); // the limit was the bottleneck: ~1 call a second for 100 s
      const worst = maxInWindow(times, 10_000);
      expect(worst.count, `calls in the 10 s from ${worst.from - started} ms`).toBeLessThanOrEqual(
        MAX_PER_10S,
      );

      // The other app went through while the flood's steps waited (more of them than worker slots).
      expect(other?.doneMs, 'the other app completed its 12 runs').toBeDefined();
      expect(other!.doneMs!).toBeLessThan(60_000);
      expect(other!.backlogAtDone!).toBeGreaterThan(6);

      // The storm: after the first 429, no gpt-4.1 call from any worker until the retry-after has nearly run out.
      expect(firstStorm429).toBeDefined();
      const t429 = firstStorm429!;
      const during = times.filter((t) => t >= t429 + STORM_MS && t < t429 + (RETRY_AFTER_S - 1) * 1_000);
      expect(during, 'gpt-4.1 calls during the retry-after').toEqual([]);
      expect(times.some((t) => t >= t429 + RETRY_AFTER_S * 1_000)).toBe(true);
      for (const w of workers) {
        const waits = w
          .logLines()
          .filter((l) => l.reason === 'retry-after' && typeof l.time === 'number' && l.time >= t429);
        expect(waits.length, `${w.name} waited for the retry-after`).toBeGreaterThan(0);
        expect(String(waits[0]!.msg)).toMatch(/^waiting for rate limit: openai\/gpt-4\.1, ~\d+ s$/);
      }
    },
  );
});
