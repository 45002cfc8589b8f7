/**
 * Live events over SSE with a real HTTP client (Node's fetch) reading the stream: event id = seq, live partial
 * events without an id, heartbeats, the `end` event when the run has ended, a client that disconnects mid-run and
 * reconnects with Last-Event-ID receiving every event exactly once; and a run followed through its pause by an
 * EventSource-style client (eventsource-parser): `status` at the pause, the rest and `end` on the same stream once
 * a confirmation is posted, a client that hung up at the pause resuming with 200, `stay=0`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FunctionTool,
  LlmAgent,
  SequentialAgent,
  type Engine,
  type Event,
  type GenerateOptions,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '../../src/index.js';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import { call, scripted } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';
import { openSse } from '../support/client/sse.js';
import { waitFor } from '../support/assert/wait-for.js';

/** One SSE message as a client sees it (a comment line is a message with `comment`). */
interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
  retry?: string;
}

/** A stream being read: every message so far, and whether the server ended it. */
interface SseReader {
  status: number;
  messages: SseMessage[];
  done: Promise<void>;
  ended: boolean;
  abort(): void;
}

/** Opens an SSE request and reads it in the background, message by message. */
async function openStream(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const reader: SseReader = {
    status: response.status,
    messages: [],
    ended: false,
    done: Promise.resolve(),
    abort: () => controller.abort(),
  };
  if (!response.body || response.status !== 200) return reader;
  const body = response.body;
  reader.done = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const message: SseMessage = {};
          for (const line of block.split('\n')) {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === '') message.comment = value;
            else if (field === 'id' || field === 'event' || field === 'data' || field === 'retry') {
              message[field] = value;
            }
          }
          reader.messages.push(message);
        }
      }
      reader.ended = true;
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err;
    }
  })();
  return reader;
}

const eventsOf = (r: SseReader): Event[] =>
  r.messages
    .filter((m) => m.data !== undefined && m.event === undefined)
    .map((m) => JSON.parse(m.data!) as Event);

/** Gates the test opens to let a model answer: `gates.open('a')`. */
function gates() {
  const waiting = new Map<string, () => void>();
  const opened = new Set<string>();
  return {
    wait(name: string): Promise<void> {
      if (opened.has(name)) return Promise.resolve();
      return new Promise((resolve) => waiting.set(name, resolve));
    },
    open(name: string): void {
      opened.add(name);
      waiting.get(name)?.();
    },
  };
}

/** A model that streams `chunk N` partials until its gate opens, then answers. */
class StreamingModel implements Model {
  readonly name = 'streaming';
  constructor(private readonly gate: ReturnType<typeof gates>) {}

  async generate(request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    let released = false;
    void this.gate.wait('stream').then(() => (released = true));
    for (let chunk = 0; !released; chunk++) {
      options?.onPartial?.({ role: 'model', parts: [{ text: `chunk ${chunk} ` }] });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return { content: { role: 'model', parts: [{ text: 'streamed answer' }] }, finishReason: 'STOP' };
  }
}

describe.each(backends)('SSE event streams on $name', (backend) => {
  const gate = gates();
  let engine: Engine;
  let server: ApiApp;
  let base: string;

  beforeAll(async () => {
    const step = (name: string) =>
      scripted(name, async (turn) => {
        await gate.wait(`${String(turn.state.run)}:${name}`);
        return `${name} done`;
      });
    const send = new FunctionTool({
      name: 'send',
      description: 'sends',
      requireConfirmation: true,
      execute: () => ({ sent: true }),
    });
    engine = await engineOn(backend, {
      apps: [
        {
          name: 'steps',
          agent: new SequentialAgent({ name: 'flow', subAgents: ['a', 'b', 'c', 'd'].map(step) }),
        },
        {
          name: 'stream',
          agent: new LlmAgent({ name: 'streamer', model: new StreamingModel(gate), stream: true }),
        },
        {
          name: 'confirm',
          agent: scripted('sender', (t) => (t.callIndex === 0 ? call('send') : 'sent it'), { tools: [send] }),
        },
      ],
    });
    server = await createApiServer({ engine, heartbeatMs: 40, processMetrics: false });
    base = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
    await engine?.close();
  });

  async function enqueue(app: string, run: string): Promise<string> {
    const { invocationId } = await engine.enqueue({ app, userId: 'u', input: 'go', stateDelta: { run } });
    return invocationId;
  }

  it('streams events live with id = seq and heartbeats, then an end event when the run completes', async () => {
    const id = await enqueue('steps', 'live');
    const stream = await openStream(`${base}/v1/invocations/${id}/events`);
    expect(stream.status).toBe(200);
    await waitFor(() => stream.messages.some((m) => m.comment === 'keep-alive'), { what: 'a heartbeat' });
    expect(stream.messages[0]).toEqual({ retry: '2000' });
    // Nothing of the gated steps yet: only the user's input is stored.
    expect(eventsOf(stream).map((e) => e.author)).toEqual(['user']);
    for (const step of ['a', 'b', 'c', 'd']) {
      gate.open(`live:${step}`);
      await waitFor(() => eventsOf(stream).some((e) => e.author === step), { what: `event of ${step}` });
    }
    await stream.done;
    expect(stream.ended).toBe(true);
    const last = stream.messages.at(-1);
    expect(last?.event).toBe('end');
    expect(JSON.parse(last?.data ?? '{}')).toMatchObject({ status: 'completed' });
    const events = eventsOf(stream);
    const stored: Event[] = [];
    for await (const e of engine.events(id)) stored.push(e);
    expect(events.map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
    for (const m of stream.messages.filter((m) => m.data !== undefined && m.event === undefined)) {
      expect(m.id).toBe(String((JSON.parse(m.data!) as Event).seq));
    }
  });

  it('resumes with Last-Event-ID after a disconnect: nothing missed, nothing twice', async () => {
    const id = await enqueue('steps', 'resume');
    const first = await openStream(`${base}/v1/invocations/${id}/events`);
    gate.open('resume:a');
    await waitFor(() => eventsOf(first).some((e) => e.author === 'a'), { what: 'event of a' });
    first.abort();
    await first.done;
    const lastId = first.messages.filter((m) => m.id !== undefined).at(-1)?.id as string;
    // Events stored while no client listens.
    gate.open('resume:b');
    await waitFor(async () => {
      for await (const e of engine.events(id)) if (e.author === 'b') return true;
      return false;
    });
    const second = await openStream(`${base}/v1/invocations/${id}/events`, { 'last-event-id': lastId });
    gate.open('resume:c');
    gate.open('resume:d');
    await second.done;
    const seqs = [...eventsOf(first), ...eventsOf(second)].map((e) => e.seq);
    const stored: number[] = [];
    for await (const e of engine.events(id)) stored.push(e.seq);
    expect(seqs).toEqual(stored);
    expect(new Set(seqs).size).toBe(seqs.length);
    // A reconnect to a settled run with nothing left: 204, so browsers stop reconnecting.
    const after = await openStream(`${base}/v1/invocations/${id}/events`, {
      'last-event-id': String(stored.at(-1)),
    });
    expect(after.status).toBe(204);
    // ?after= works like Last-Event-ID for a first connection.
    const tail = await openStream(`${base}/v1/invocations/${id}/events?after=${stored.at(-2)}`);
    await tail.done;
    expect(eventsOf(tail).map((e) => e.seq)).toEqual([stored.at(-1)]);
  });

  it('sends streamed partial events live, without an id', async () => {
    const id = await enqueue('stream', 'partial');
    const stream = await openStream(`${base}/v1/invocations/${id}/events`);
    await waitFor(() => eventsOf(stream).filter((e) => e.partial).length >= 2, { what: 'partial events' });
    gate.open('stream');
    await stream.done;
    const partials = stream.messages.filter((m) => m.data?.includes('"partial":true'));
    expect(partials.length).toBeGreaterThanOrEqual(2);
    for (const p of partials) expect(p.id).toBeUndefined();
    expect(JSON.parse(partials[0]?.data ?? '{}')).toMatchObject({ author: 'streamer', invocationId: id });
    const final = eventsOf(stream).filter((e) => !e.partial);
    expect(final.at(-1)?.content?.parts[0]?.text).toBe('streamed answer');
    expect(stream.messages.at(-1)?.event).toBe('end');
  });

  it('ends open streams when the server closes, so that clients resume on another server', async () => {
    const id = await enqueue('steps', 'closing');
    const other = await createApiServer({ engine, heartbeatMs: 40, processMetrics: false });
    const otherBase = await other.listen({ port: 0, host: '127.0.0.1' });
    const stream = await openStream(`${otherBase}/v1/invocations/${id}/events`);
    await waitFor(() => eventsOf(stream).length > 0, { what: 'the first event' });
    await other.close();
    await stream.done;
    expect(stream.ended).toBe(true);
    expect(stream.messages.some((m) => m.event === 'end')).toBe(false);
    const lastId = stream.messages.filter((m) => m.id !== undefined).at(-1)?.id as string;
    for (const step of ['a', 'b', 'c', 'd']) gate.open(`closing:${step}`);
    const resumed = await openStream(`${base}/v1/invocations/${id}/events`, { 'last-event-id': lastId });
    await resumed.done;
    const seqs = [...eventsOf(stream), ...eventsOf(resumed)].map((e) => e.seq);
    const stored: number[] = [];
    for await (const e of engine.events(id)) stored.push(e.seq);
    expect(seqs).toEqual(stored);
  });

  /** The paused call's id, read through the API as a browser would. */
  async function pendingCall(id: string): Promise<string> {
    const view = (await (await fetch(`${base}/v1/invocations/${id}`)).json()) as {
      status: string;
      pending: { callId: string }[];
    };
    expect(view.status).toBe('paused');
    return view.pending[0]!.callId;
  }

  async function storedSeqs(id: string): Promise<number[]> {
    const seqs: number[] = [];
    for await (const e of engine.events(id)) seqs.push(e.seq);
    return seqs;
  }

  it('follows a run through its pause: status at the pause, the rest and end after the answer; a resumed client waits', async () => {
    const id = await enqueue('confirm', 'through');
    const url = `${base}/v1/invocations/${id}/events`;
    // An EventSource-style client (eventsource-parser over fetch) that stays through the pause.
    const staying = await openSse(url);
    // A second one that hangs up at the pause.
    const leaving = await openSse(url);
    expect([staying.status, leaving.status]).toEqual([200, 200]);
    for (const client of [staying, leaving]) {
      await waitFor(() => client.named('status').some((s) => s.status === 'paused'), {
        timeoutMs: 30_000,
        what: 'a status event saying paused',
      });
    }
    const callId = await pendingCall(id);
    // Paused, not ended: the stream stays open (heartbeats go on), no `end`.
    const beats = staying.comments.length;
    await waitFor(() => staying.comments.length >= beats + 2, {
      what: 'heartbeats while paused',
    });
    expect(staying.ended).toBe(false);
    expect(staying.named('end')).toEqual([]);
    const atPause = await storedSeqs(id);
    expect(staying.named('status')).toEqual([{ status: 'paused', lastSeq: atPause.at(-1) }]);

    leaving.abort();
    await leaving.done;
    const lastId = leaving.messages.filter((m) => m.id !== undefined).at(-1)?.id as string;
    expect(Number(lastId)).toBe(atPause.at(-1));
    // Resuming after the last event of the pause: 200, and it waits for what comes next (no 204 that would stop
    // an EventSource from reconnecting).
    const resumed = await openSse(url, { 'last-event-id': lastId });
    expect(resumed.status).toBe(200);
    await waitFor(() => resumed.named('status').some((s) => s.status === 'paused'), {
      what: 'the resumed stream to say paused',
    });
    expect(resumed.events()).toEqual([]);
    expect(resumed.ended).toBe(false);

    // The human answers while both streams are open.
    const answered = await fetch(`${url.replace(/\/events$/, '')}/confirmations/${callId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ confirmed: true }),
    });
    expect(answered.status).toBe(200);
    await Promise.all([staying.done, resumed.done]);
    const stored = await storedSeqs(id);
    expect(stored.length).toBeGreaterThan(atPause.length);
    for (const client of [staying, resumed]) {
      // The same stream delivers the rest and ends with `end`, closed by the server.
      expect(client.ended).toBe(true);
      expect(client.messages.at(-1)?.event).toBe('end');
      expect(client.named('end')).toEqual([{ status: 'completed', lastSeq: stored.at(-1) }]);
      expect(client.events().some((e) => e.content?.parts[0]?.text === 'sent it')).toBe(true);
      // `status` only while it had not ended: paused, then possibly running again.
      expect(client.named('status').map((s) => s.status)).toEqual(expect.arrayContaining(['paused']));
      for (const s of client.named('status')) expect(['paused', 'running']).toContain(s.status);
    }
    // Every stored event once on the staying stream; across the hang-up and the resume, each once too.
    expect(staying.events().map((e) => e.seq)).toEqual(stored);
    expect([...leaving.events(), ...resumed.events()].map((e) => e.seq)).toEqual(stored);

    // Ended, nothing after the given id: 204 (an EventSource stops reconnecting).
    const over = await openSse(url, { 'last-event-id': String(stored.at(-1)) });
    expect(over.status).toBe(204);
    // An id before the end: the rest, then `end`.
    const tail = await openSse(url, { 'last-event-id': String(stored.at(-2)) });
    expect(tail.status).toBe(200);
    await tail.done;
    expect(tail.events().map((e) => e.seq)).toEqual([stored.at(-1)]);
    expect(tail.named('end')).toEqual([{ status: 'completed', lastSeq: stored.at(-1) }]);
  });

  it('stay=1 is the default; stay=0 ends at the pause, and a resume there answers 204', async () => {
    const id = await enqueue('confirm', 'stay');
    const url = `${base}/v1/invocations/${id}/events`;
    const plain = await openSse(`${url}?stay=0`);
    await plain.done;
    expect(plain.ended).toBe(true);
    expect(plain.named('end')).toEqual([expect.objectContaining({ status: 'paused' })]);
    expect(plain.named('status')).toEqual([]);
    const lastId = plain.messages.filter((m) => m.id !== undefined).at(-1)?.id as string;
    expect((await openSse(`${url}?stay=0`, { 'last-event-id': lastId })).status).toBe(204);

    const staying = await openSse(`${url}?stay=1`, { 'last-event-id': lastId });
    expect(staying.status).toBe(200);
    await waitFor(() => staying.named('status').some((s) => s.status === 'paused'), {
      what: 'stay=1 to say paused',
    });
    await engine.confirm(await pendingCall(id), { confirmed: true, invocationId: id });
    await staying.done;
    expect(staying.named('end')).toEqual([expect.objectContaining({ status: 'completed' })]);
    const seqs = [...plain.events(), ...staying.events()].map((e) => e.seq);
    expect(seqs).toEqual(await storedSeqs(id));
  });
});
