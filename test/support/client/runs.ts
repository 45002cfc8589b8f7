/**
 * Runs read through the HTTP API with the tests' {@link apiClient}: waiting until a run has a status, polled through
 * `GET /v1/invocations/:id` (for servers in other processes, whose engine the test cannot ask directly).
 */
import { waitFor } from '../assert/wait-for.js';
import type { ApiCall, Json } from './http-client.js';

/** Options of {@link runReaches}. */
export interface RunReachesOptions {
  /** How long the run may take (ms). Default 60 000. */
  timeoutMs?: number;
  /** How often the run is read (ms). Default 100. */
  intervalMs?: number;
  /** Statuses that fail the wait at once, naming the run and its view (e.g. `['failed', 'cancelled']`). */
  failOn?: string[];
}

/**
 * The run `id` as `GET /v1/invocations/:id` answers it once its status is `status` (or matches it). A read that is
 * not 200 fails the wait, quoting the answer.
 */
export async function runReaches<B extends object = Json>(
  http: ApiCall<B>,
  id: string,
  status: string | RegExp,
  { timeoutMs = 60_000, intervalMs = 100, failOn = [] }: RunReachesOptions = {},
): Promise<B> {
  return waitFor(
    async () => {
      const answer = await http('GET', `/v1/invocations/${id}`);
      if (answer.status !== 200) throw new Error(`GET run ${id} answered ${answer.status}: ${answer.text}`);
      const now = String((answer.body as { status?: unknown }).status);
      if (
        (typeof status === 'string' && now === status) ||
        (typeof status !== 'string' && status.test(now))
      ) {
        return answer.body;
      }
      if (failOn.includes(now)) throw new Error(`run ${id} is ${now}, not ${String(status)}: ${answer.text}`);
      return undefined;
    },
    { timeoutMs, intervalMs, what: `run ${id} to be ${String(status)}` },
  );
}
