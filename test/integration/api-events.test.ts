/**
 * Live events over SSE with a real HTTP client (Node's fetch) reading the stream: event id = seq, live partial
 * events without an id, heartbeats, the `end` event when the run settles, `stay=1`, and a client that disconnects
 * mid-run and reconnects with Last-Event-ID receiving every event exactly once.
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
import { call, scripted } from '../support/agents.js';
import { backends, engineOn } from '../support/engines.js';
import { waitFor } from '../support/wait-for.js';

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

  it('ends at a pause, and with stay=1 stays open across the pause until the client leaves', async () => {
    const id = await enqueue('confirm', 'stay');
    const plain = await openStream(`${base}/v1/invocations/${id}/events`);
    await plain.done;
    expect(JSON.parse(plain.messages.at(-1)?.data ?? '{}')).toMatchObject({ status: 'paused' });

    const staying = await openStream(`${base}/v1/invocations/${id}/events?stay=1`);
    const paused = await engine.wait(id, { timeoutMs: 30_000 });
    const beforeAnswer = eventsOf(staying).length;
    await waitFor(() => staying.messages.filter((m) => m.comment === 'keep-alive').length >= 2, {
      what: 'heartbeats while paused',
    });
    expect(staying.messages.some((m) => m.event === 'end')).toBe(false);
    // Instead of `end`, a `status` event says each time it settles.
    const statuses = () =>
      staying.messages.filter((m) => m.event === 'status').map((m) => JSON.parse(m.data!).status as string);
    expect(statuses()).toEqual(['paused']);
    await engine.confirm(paused.pending[0]!.callId, { confirmed: true, invocationId: id });
    await waitFor(() => eventsOf(staying).some((e) => e.content?.parts[0]?.text === 'sent it'), {
      what: 'the final answer on the staying stream',
    });
    await waitFor(() => statuses().at(-1) === 'completed', { what: 'a status event saying completed' });
    expect(eventsOf(staying).length).toBeGreaterThan(beforeAnswer);
    expect(staying.ended).toBe(false);
    staying.abort();
    await staying.done;
    const seqs = eventsOf(staying).map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
  });
});
