/**
 * Durability per provider across a worker's SIGKILL, for OpenAIModel (Chat Completions) and AnthropicModel
 * (Messages API) in real `agentloom worker` processes on PostgreSQL and Redis, each talking to a scripted wire
 * server in this process (test/support/wire/openai-wire.ts, anthropic-wire.ts) that counts the requests it receives:
 *
 * - crash after the model call is stored: the first answer is a tool call; its tool waits (fixture
 *   test/e2e/fixtures/provider-apps.ts) and the worker holding the step is SIGKILLed there; another worker takes
 *   the step over, runs the tool, makes the second call and completes. The server received each call once.
 * - partials across workers: the same with `stream: true`, followed from this process (another engine than the
 *   workers'): the text deltas of both calls — the first streamed by the killed worker, the second by its
 *   successor — arrive in order, and each stored answer holds its whole text once.
 *
 * The wire server answers by what a request holds (a tool result or not; streamed or not), not by a queue, so a
 * resumed step that sent the stored call again would get the tool call again: three requests, not two.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Event } from '../../../src/index.js';
import { chatCompletion, chatCompletionStream, startOpenAIWire } from '../../support/wire/openai-wire.js';
import { anthropicMessage, anthropicStream, startAnthropicWire } from '../../support/wire/anthropic-wire.js';
import { REPO } from '../../support/processes/cli.js';
import {
  Cluster,
  fileServices,
  invocationHistory,
  marksOf,
  nodeLease,
  normalizeHistory,
  waitForMarks,
  type NodeLease,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';
import type { RecordedRequest, ScriptedWireServer, WireReply } from '../../support/wire/wire-server.js';
import { PROVIDERS, WIRE_URL_ENV, WRITE_TOOL, type Provider } from '../fixtures/provider-apps.js';

/** The tool call id of each provider's first answer. */
const CALL_ID: Record<Provider, string> = { openai: 'call_write_1', anthropic: 'toolu_write_1' };
const ARGS = { item: 'entry-1' };
const ARG_CHUNKS = ['{"item":', ' "entry-1"}'];
/** Text deltas of the first (streamed) answer, before its tool call. */
const FIRST_TEXT = ['Let me ', 'write ', 'it down.'];
/** Text deltas of the final answer (sent whole when not streamed). */
const FINAL_TEXT = ['Wrote ', 'entry-1', ' once.'];
const FINAL = FINAL_TEXT.join('');

interface ToolResult {
  id: unknown;
  content: unknown;
}

const messagesOf = (request: RecordedRequest): Record<string, unknown>[] =>
  Array.isArray(request.body.messages) ? (request.body.messages as Record<string, unknown>[]) : [];

/** The tool results a request sends back (OpenAI: `tool` messages; Anthropic: `tool_result` blocks). */
function toolResultsOf(provider: Provider, request: RecordedRequest): ToolResult[] {
  if (provider === 'openai') {
    return messagesOf(request)
      .filter((m) => m.role === 'tool')
      .map((m) => ({ id: m.tool_call_id, content: m.content }));
  }
  return messagesOf(request)
    .flatMap((m) => (Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : []))
    .filter((block) => block.type === 'tool_result')
    .map((block) => ({ id: block.tool_use_id, content: block.content }));
}

/** The scripted model: the tool call until the request carries a tool result, then the final text. */
function script(provider: Provider): (request: RecordedRequest) => WireReply {
  return (request) => {
    const answered = toolResultsOf(provider, request).length > 0;
    const stream = request.body.stream === true;
    const id = CALL_ID[provider];
    if (provider === 'openai') {
      if (answered)
        return stream ? chatCompletionStream({ text: FINAL_TEXT }) : chatCompletion({ text: FINAL });
      return stream
        ? chatCompletionStream({
            text: FIRST_TEXT,
            toolCalls: [{ id, name: WRITE_TOOL, argChunks: ARG_CHUNKS }],
          })
        : chatCompletion({ toolCalls: [{ id, name: WRITE_TOOL, args: ARGS }] });
    }
    if (answered) {
      return stream
        ? anthropicStream({ blocks: [{ text: FINAL_TEXT }] })
        : anthropicMessage({ blocks: [{ text: FINAL }] });
    }
    const toolUse = { id, name: WRITE_TOOL };
    return stream
      ? anthropicStream({
          blocks: [{ text: FIRST_TEXT }, { toolUse: { ...toolUse, jsonChunks: ARG_CHUNKS } }],
        })
      : anthropicMessage({ blocks: [{ toolUse: { ...toolUse, input: ARGS } }] });
  };
}

const servers: Record<Provider, ScriptedWireServer> = {
  openai: await startOpenAIWire({ fallback: script('openai') }),
  anthropic: await startAnthropicWire({ fallback: script('anthropic') }),
};
afterAll(async () => {
  await Promise.all(PROVIDERS.map((p) => servers[p].close()));
});

const { options, engine, db } = await fileServices({
  appsModule: join(REPO, 'test/e2e/fixtures/provider-apps.ts'),
  env: Object.fromEntries(PROVIDERS.map((p) => [WIRE_URL_ENV[p], servers[p].url])),
});

/** Enqueues a run of `app` whose input names its tag, so the wire server's requests of the run can be told. */
async function enqueueRun(app: string, run: string): Promise<string> {
  const input = `Please write entry-1 (run ${run}).`;
  const { invocationId } = await engine.enqueue({ app, userId: 'e2e', input, stateDelta: { run } });
  return invocationId;
}

/** The model requests the wire server received for a run, oldest first. */
function requestsOf(provider: Provider, run: string): RecordedRequest[] {
  return servers[provider].requests.filter((r) => JSON.stringify(r.body.messages).includes(`(run ${run})`));
}

/** The run's stored events whose content holds a function call. */
async function storedCalls(id: string): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of engine.events(id)) {
    if (event.content?.parts.some((p) => p.functionCall)) events.push(event);
  }
  return events;
}

/**
 * Waits until the run's tool started (its model answer is stored by then), checks that, SIGKILLs the worker that
 * holds the step, and waits until another worker claimed it (a new attempt).
 */
async function killHolderInTool(
  cluster: Cluster,
  provider: Provider,
  { id, run, onKilled }: { id: string; run: string; onKilled?: () => void },
): Promise<{ held: NodeLease; takeover: NodeLease; killedAtMs: number }> {
  const [started] = await waitForMarks(db, 'tool-start', id, { timeoutMs: 90_000 });
  const held = await nodeLease(db, id, 'writer');
  expect(held?.status).toBe('running');
  const victim = cluster.byPid(held?.pid ?? -1);
  expect(victim, `lease owner ${held?.owner} is one of our workers`).toBeDefined();
  expect(started?.pid).toBe(victim?.pid);
  // The model's answer is stored before its tool runs: the crash comes after the model call is journaled.
  expect(await storedCalls(id)).toHaveLength(1);
  expect(requestsOf(provider, run)).toHaveLength(1);

  await victim?.kill();
  const killedAtMs = Date.now();
  onKilled?.();
  const takeover = await waitFor(
    async () => {
      const now = await nodeLease(db, id, 'writer');
      return now && now.attempt > (held?.attempt ?? 0) && now.pid !== victim?.pid ? now : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, what: 'another worker to claim the killed step' },
  );
  return { held: held as NodeLease, takeover, killedAtMs };
}

/** What the wire server received for the run: each call exactly once, the second with the tool's result. */
function expectEachCallOnce(provider: Provider, run: string): RecordedRequest[] {
  const requests = requestsOf(provider, run);
  expect(requests).toHaveLength(2);
  const [first, second] = requests as [RecordedRequest, RecordedRequest];
  expect(toolResultsOf(provider, first)).toEqual([]);
  expect(toolResultsOf(provider, second)).toEqual([
    { id: CALL_ID[provider], content: JSON.stringify({ written: 'entry-1' }) },
  ]);
  return requests;
}

describe.each(PROVIDERS)('%s model in a worker SIGKILLed after its call was stored', (provider) => {
  it('is not sent again by the worker that takes the step over; the run completes', async () => {
    const cluster = new Cluster(options);
    await cluster.start(2);
    const run = `${provider}-crash`;
    const id = await enqueueRun(`${provider}_tool`, run);
    const { held, takeover, killedAtMs } = await killHolderInTool(cluster, provider, { id, run });
    const takeoverSeenMs = Date.now() - killedAtMs;
    // The takeover really happened: a later attempt of the step, held by another worker.
    expect(takeover.attempt).toBeGreaterThan(held.attempt);
    expect(takeover.pid).not.toBe(held.pid);

    const done = await engine.wait(id, { timeoutMs: 90_000 });
    expect(done.status).toBe('completed');
    expect(done.output).toBe(FINAL);
    const requests = expectEachCallOnce(provider, run);
    expect(requests.every((r) => r.body.stream !== true)).toBe(true);
    const history = await invocationHistory(engine, id);
    // One function call, one function response, the final text: nothing twice.
    expect(history.slice(1)).toEqual([
      `writer: call ${WRITE_TOOL}(${JSON.stringify(ARGS)})`,
      `writer: response ${WRITE_TOOL} {"written":"entry-1"}`,
      `writer: text ${JSON.stringify(FINAL)}`,
    ]);
    // The tool's response was not stored before the kill: the successor ran it (again) and stored it.
    const toolStarts = await marksOf(db, 'tool-start', id);
    expect(toolStarts.map((m) => m.pid)).toEqual([held.pid, takeover.pid]);
    console.log(
      `${provider} crash: server received ${requests.length} requests for the run (${servers[provider].count} in ` +
        `all); step attempt ${held.attempt} → ${takeover.attempt} (pid ${held.pid} → ${takeover.pid}), takeover ` +
        `seen ${takeoverSeenMs} ms after SIGKILL; history:\n  ${history.join('\n  ')}`,
    );
  });

  it('streams: partials of both calls reach a follower in another process in order; stored once', async () => {
    const run = `${provider}-stream`;
    const id = await enqueueRun(`${provider}_stream`, run);
    // Followed from this process before any worker runs, so every partial of the run is published to it.
    const seen: Event[] = [];
    const following = (async () => {
      for await (const event of engine.events(id, { follow: true, partial: true })) seen.push(event);
    })();
    following.catch(() => undefined);
    // Its first event (the user's) is yielded once it listens to partial events.
    await waitFor(() => seen.length > 0, { timeoutMs: 30_000, what: 'the follower to start' });
    const cluster = new Cluster(options);
    await cluster.start(2);
    // What reached the follower until the victim's exit: nothing its successor can have sent yet.
    let beforeKill = 0;
    const { held, takeover } = await killHolderInTool(cluster, provider, {
      id,
      run,
      onKilled: () => (beforeKill = seen.length),
    });

    await following;
    expect((await engine.get(id)).status).toBe('completed');
    expectEachCallOnce(provider, run).forEach((r) => expect(r.body.stream).toBe(true));
    const partials = (events: Event[]): string[] => normalizeHistory(events.filter((e) => e.partial));
    for (const p of seen.filter((e) => e.partial)) {
      expect(p).toMatchObject({ invocationId: id, author: 'writer', partial: true });
    }
    // The killed worker's partials reached this process before the kill, its successor's after.
    expect(partials(seen.slice(0, beforeKill))).toEqual([
      ...FIRST_TEXT.map((t) => `writer: text ${JSON.stringify(t)}`),
      `writer: call ${WRITE_TOOL}(${JSON.stringify(ARGS)})`,
    ]);
    expect(partials(seen.slice(beforeKill))).toEqual(
      FINAL_TEXT.map((t) => `writer: text ${JSON.stringify(t)}`),
    );
    // Stored: each answer whole, once; partials never.
    const stored = seen.filter((e) => !e.partial);
    const first = FIRST_TEXT.join('');
    expect(normalizeHistory(stored).slice(1)).toEqual([
      `writer: text ${JSON.stringify(first)} | call ${WRITE_TOOL}(${JSON.stringify(ARGS)})`,
      `writer: response ${WRITE_TOOL} {"written":"entry-1"}`,
      `writer: text ${JSON.stringify(FINAL)}`,
    ]);
    const session = await engine.getSession((await engine.get(id)).sessionId);
    expect(session.events.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    console.log(
      `${provider} stream: ${seen.filter((e) => e.partial).length} partials reached the test process ` +
        `(${partials(seen.slice(0, beforeKill)).length} from pid ${held.pid} before its kill, ` +
        `${partials(seen.slice(beforeKill)).length} from pid ${takeover.pid}); ${requestsOf(provider, run).length} ` +
        `requests; stored:\n  ${normalizeHistory(stored).join('\n  ')}`,
    );
  });
});
