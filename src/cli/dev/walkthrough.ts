/**
 * The walkthrough of `npm start` (`agentloom dev --walkthrough`): once the server listens, it enqueues one run of
 * the example app through its own HTTP API, prints the run's events live from the SSE stream (with their branch
 * labels), and when the run pauses for the publish confirmation prints the exact CLI line and curl line that
 * approve it. It keeps following until the run ends; the server keeps serving after that.
 */
import type { ApiKey } from '../../api/http/auth.js';
import { ApiClient } from '../client/api-client.js';
import { EXAMPLE_APP, EXAMPLE_INPUT } from './demo-app.js';
import { followInvocation } from '../client/follow.js';
import { formatEvent } from '../terminal/format.js';
import { cliLine, curlConfirmLine, describePending, type HintOptions } from '../client/pending.js';

const ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Options of {@link runWalkthrough}. */
export interface WalkthroughOptions {
  /** The server's own address. */
  url: string;
  /** The server's keys: when there are some, `clientKey` must be one of them. */
  apiKeys: readonly ApiKey[];
  /** AGENTLOOM_API_KEY: the key the walkthrough sends when the server needs one. */
  clientKey: string | undefined;
  /** Aborted when the server shuts down. */
  signal: AbortSignal;
}

/** Prints how to answer the calls a paused run waits for (each call once). */
function printPause(
  invocationId: string,
  calls: Awaited<ReturnType<ApiClient['invocation']>>['pending'],
  hints: HintOptions,
): void {
  for (const call of calls) {
    console.log(`\n⏸  paused: ${describePending(call)}`);
    if (call.kind !== 'confirmation') {
      console.log(
        `   answer it: ${cliLine(['respond', invocationId, call.callId, '{"result":"…"}'], hints)}`,
      );
      continue;
    }
    console.log('   A human must confirm this call. Approve it in the web console:');
    console.log(`     ${hints.url}/#/runs/${encodeURIComponent(invocationId)}`);
    console.log('   or from another terminal:');
    console.log(`     ${cliLine(['approve', invocationId, call.callId], hints)}`);
    console.log('   or with curl:');
    console.log(`     ${curlConfirmLine(invocationId, call.callId, true, hints)}`);
    console.log(`   (or reject it: ${cliLine(['reject', invocationId, call.callId], hints)})`);
  }
  console.log('   waiting for the answer…\n');
}

/** Runs the walkthrough; resolves when the run has ended (or the server is shutting down). */
export async function runWalkthrough(o: WalkthroughOptions): Promise<void> {
  const authEnabled = o.apiKeys.length > 0;
  if (authEnabled && !o.clientKey) {
    console.log(
      '\nwalkthrough skipped: the server needs API keys; set AGENTLOOM_API_KEY to one of AGENTLOOM_API_KEYS to run it',
    );
    return;
  }
  const client = new ApiClient({ url: o.url, apiKey: authEnabled ? o.clientKey : undefined });
  const hints: HintOptions = authEnabled
    ? {
        url: o.url,
        keyArgument: '--api-key "$AGENTLOOM_API_KEY"',
        keyHeader: '-H "authorization: Bearer $AGENTLOOM_API_KEY"',
      }
    : { url: o.url };
  console.log(
    `\nwalkthrough: POST ${o.url}/v1/apps/${EXAMPLE_APP}/invocations  {"input": "${EXAMPLE_INPUT}"}`,
  );
  const { invocationId } = await client.enqueue(EXAMPLE_APP, { userId: 'walkthrough', input: EXAMPLE_INPUT });
  console.log(
    `invocation ${invocationId}: its live events (GET …/events, text/event-stream): #seq [branch] author`,
  );
  const shown = new Set<string>();
  const { status } = await followInvocation(
    client,
    invocationId,
    { stay: true, signal: o.signal },
    {
      onEvent: (event) => console.log(formatEvent(event)),
      onSettled: async (settled) => {
        if (ENDED.has(settled)) return true;
        if (settled !== 'paused') return false; // answered already: it runs again
        const fresh = (await client.invocation(invocationId)).pending.filter((c) => !shown.has(c.callId));
        for (const call of fresh) shown.add(call.callId);
        if (fresh.length > 0) printPause(invocationId, fresh, hints);
        return false;
      },
      onReconnect: () => undefined,
    },
  );
  const view = await client.invocation(invocationId);
  const detail =
    status === 'completed'
      ? `: ${view.output ?? '(no output)'}`
      : view.error
        ? `: ${view.error.code}: ${view.error.message}`
        : '';
  console.log(`\nthe run ${status}${detail}`);
  console.log(`still serving on ${o.url} (Ctrl-C to stop). Try: ${cliLine(['status', invocationId], hints)}`);
}
