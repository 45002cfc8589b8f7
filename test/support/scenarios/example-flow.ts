/**
 * The example app's service flow, driven only through HTTP against a running server (`agentloom
 * dev`, or `agentloom api` with workers): enqueue a run of the example app, receive its events live over SSE with
 * their branch labels, disconnect and reconnect with Last-Event-ID, see it pause for the publish confirmation (a
 * `status` event on a stream that stays open), hang up there and resume with Last-Event-ID (200, waiting), confirm
 * it, and see the rest and `end` on that stream — every stored event received exactly once across the three
 * connections.
 */
import { expect } from 'vitest';
import type { Event } from '../../../src/index.js';
import { openSse } from '../client/sse.js';
import { waitFor } from '../assert/wait-for.js';

interface InvocationBody {
  status: string;
  output: string | null;
  pending: { callId: string; kind: string; name: string; nodePath: string }[];
}

/** Runs the flow against `base`; returns the invocation id. */
export async function exampleRunOverSse(base: string, headers: Record<string, string> = {}): Promise<string> {
  const json = { ...headers, 'content-type': 'application/json' };
  const created = await fetch(`${base}/v1/apps/writer/invocations`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ userId: 'e2e', input: 'Write a short post about durable AI agents' }),
  });
  expect(created.status).toBe(202);
  const { invocationId } = (await created.json()) as { invocationId: string };
  const eventsUrl = `${base}/v1/invocations/${invocationId}/events`;

  // 1. A client receives the first events, then goes away mid-stream.
  const first = await openSse(eventsUrl, headers);
  expect(first.status).toBe(200);
  await waitFor(() => first.events().length >= 1 || first.ended, {
    timeoutMs: 60_000,
    what: 'a first event',
  });
  first.abort();
  await first.done;
  const received1 = first.events();
  expect(received1.length).toBeGreaterThanOrEqual(1);

  // 2. It reconnects with the id of the last event it got, and reads on until the run pauses: the stream says so
  //    with a `status` event and stays open (a paused run has not ended). This client hangs up there.
  const second = await openSse(eventsUrl, { ...headers, 'last-event-id': String(received1.at(-1)?.seq) });
  expect(second.status).toBe(200);
  await waitFor(() => second.named('status').some((s) => s.status === 'paused'), {
    timeoutMs: 60_000,
    what: 'the stream to say paused',
  });
  expect(second.ended).toBe(false);
  second.abort();
  await second.done;
  const received2 = second.events();
  expect(second.named('end')).toEqual([]);
  const view = (await (
    await fetch(`${base}/v1/invocations/${invocationId}`, { headers })
  ).json()) as InvocationBody;
  expect(view.status).toBe('paused');
  const pending = view.pending[0];
  expect(pending).toMatchObject({
    kind: 'confirmation',
    name: 'publish_post',
    nodePath: 'writer_pipeline/publisher',
  });

  // 3. It resumes at the pause (200: it waits for what comes next), is told it is paused, and sees the rest live
  //    on the same stream once it is confirmed, to `end`.
  const lastSeq = (received2.at(-1) ?? received1.at(-1))?.seq;
  const third = await openSse(eventsUrl, { ...headers, 'last-event-id': String(lastSeq) });
  expect(third.status).toBe(200);
  await waitFor(() => third.named('status').some((s) => s.status === 'paused'), {
    timeoutMs: 60_000,
    what: 'the resumed stream to say paused',
  });
  expect(third.events()).toEqual([]);
  const confirmed = await fetch(`${base}/v1/invocations/${invocationId}/confirmations/${pending?.callId}`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ confirmed: true }),
  });
  expect(confirmed.status).toBe(200);
  await third.done;
  expect(third.ended).toBe(true);
  expect(third.named('end')).toEqual([expect.objectContaining({ status: 'completed' })]);
  const received3 = third.events();
  // Live after the answer: the confirmation, the tool's response and the final answer.
  expect(received3.map(line)).toEqual(
    expect.arrayContaining([
      'user: response adk_request_confirmation',
      'publisher: response publish_post',
      'publisher: text Published "Durable agents".',
    ]),
  );

  // Nothing missed, nothing twice: the three connections together are exactly the stored history.
  const seqs = [...received1, ...received2, ...received3].map((e) => e.seq);
  const listed = (await (await fetch(eventsUrl, { headers })).json()) as { events: Event[] };
  expect(seqs).toEqual(listed.events.map((e) => e.seq));
  // Branch labels: the parallel research runs on two branches.
  const all = [...received1, ...received2, ...received3];
  expect(all.find((e) => e.author === 'research_web')?.branch).toBe('research.0');
  expect(all.find((e) => e.author === 'research_docs')?.branch).toBe('research.1');
  expect(all.some((e) => e.author === 'critic' && e.actions.escalate)).toBe(true);

  const done = (await (
    await fetch(`${base}/v1/invocations/${invocationId}`, { headers })
  ).json()) as InvocationBody;
  expect(done).toMatchObject({ status: 'completed', output: 'Published "Durable agents".', pending: [] });
  return invocationId;
}

/** `author: kind detail` of an event's first part, for order-insensitive assertions. */
function line(event: Event): string {
  const part = event.content?.parts[0];
  if (part?.functionResponse) return `${event.author}: response ${part.functionResponse.name}`;
  if (part?.functionCall) return `${event.author}: call ${part.functionCall.name}`;
  return `${event.author}: text ${part?.text ?? ''}`;
}
