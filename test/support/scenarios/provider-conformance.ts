/**
 * The cases every model adapter passes against a scripted server speaking its provider's wire format: tool-call
 * rounds, streaming order, retry-after honoured, a dropped connection and a cut stream retried, transient errors
 * given up after maxAttempts, a 400 as a clear non-retryable error, the API key redacted, and cancellation (in
 * flight, before the call, while backing off).
 *
 * Each provider's test file calls {@link describeProviderConformance} with a {@link ConformanceAdapter} (how to
 * build its model against the server, how its wire spells a reply, what its wire must carry) and keeps only the
 * cases that are about that provider.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Content } from '../../../src/core/content.js';
import type { Model, ModelUsage } from '../../../src/models/index.js';
import type { RetryOptions } from '../../../src/models/providers/retrying.js';
import { failure, modelRequest, NOW_TOOL, textOf, WEATHER_TOOL } from '../../fixtures/model-calls.js';
import { waitFor } from '../assert/wait-for.js';
import type { RecordedRequest, ScriptedWireServer, WireReply } from '../wire/wire-server.js';

/** A tool call of a scripted answer. */
export interface ConformanceCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** A tool call of a scripted stream: its arguments' JSON in the pieces the server sends (whole on wires without pieces). */
export interface ConformanceStreamedCall {
  id: string;
  name: string;
  argChunks: string[];
}

/** What the suite needs to know about one provider. */
export interface ConformanceAdapter {
  /** The provider's name as errors spell it, e.g. 'OpenAI'. */
  provider: string;
  /** The model id the built model calls, e.g. 'gpt-test'. */
  modelId: string;
  /** The API key the model is built with (asserted never to appear in an error). */
  key: string;
  startWire(): Promise<ScriptedWireServer>;
  /** The adapter under test against `url`, with 1–50 ms backoff unless `retry` says otherwise. */
  model(url: string, retry?: RetryOptions): Model;
  /** The API key a request carried, as the provider's SDK sends it. */
  keySent(request: RecordedRequest): string | undefined;
  /** The path a non-streamed call is sent to, e.g. '/v1/chat/completions'. */
  callPath: string;
  /** Replies in the provider's wire format. */
  reply: {
    /** An answer of text and/or tool calls, finished normally. */
    answer(answer: { text?: string; calls?: ConformanceCall[] }): WireReply;
    /** A stream of the text deltas, then the calls, with a finish and usage ({@link streamUsage}). */
    stream(answer: { text: string[]; calls: ConformanceStreamedCall[] }): WireReply;
    /** A stream cut short before its end (a text delta, then half of `call`); absent when the wire marks no end. */
    cutStream?(text: string, call: { id: string; name: string }): WireReply;
    /** The provider's error body with `status` (the error kind it implies) and its message, and `headers`. */
    error(status: number, message: string, headers?: Record<string, string>): WireReply;
  };
  /** The usage the model reports for {@link reply.stream}. */
  streamUsage: ModelUsage;
  /** What the provider's wire must carry. */
  expectSent: {
    /**
     * A tool round: `first` asked with system 'You are terse.', 'Weather in Paris?' and WEATHER_TOOL and NOW_TOOL
     * offered; `second` sent back the result `{ forecast: 'sunny' }` of call 'call_abc' (get_weather Paris).
     */
    toolRound(first: RecordedRequest, second: RecordedRequest): void;
    /**
     * Two results of one turn: `sent` holds 'Paris and Oslo?', the model turn ('Checking both.', calls call_1 and
     * call_2), the results `{ w: 'sunny' }` and `{ w: 'snowy' }` as two contents, then the text 'Be brief.'.
     */
    twoResults(sent: RecordedRequest): void;
    /** A streamed call (`sent`) and the partials that carried its tool calls, in order. */
    stream(sent: RecordedRequest, callPartials: Content[]): void;
  };
}

/**
 * A scripted server for the tests of the enclosing file or describe: started by `start` before all of them,
 * reset (requests and queued replies forgotten) before each, closed after all. The returned object stands for
 * the running server (reading it outside a test throws).
 */
export function useWireServer(start: () => Promise<ScriptedWireServer>): ScriptedWireServer {
  let current: ScriptedWireServer | undefined;
  const now = (): ScriptedWireServer => {
    if (!current) throw new Error('the scripted server starts in beforeAll: use it inside a test');
    return current;
  };
  beforeAll(async () => {
    current = await start();
  });
  afterAll(async () => {
    await current?.close();
  });
  beforeEach(() => {
    now().reset();
  });
  return {
    get url() {
      return now().url;
    },
    get requests() {
      return now().requests;
    },
    get count() {
      return now().count;
    },
    get pending() {
      return now().pending;
    },
    reply: (...replies) => now().reply(...replies),
    reset: () => now().reset(),
    close: () => now().close(),
  };
}

/** Registers the conformance cases for `adapter`'s provider (its own scripted server, started once). */
export function describeProviderConformance(adapter: ConformanceAdapter): void {
  describe(`${adapter.provider} model conformance`, () => {
    const server = useWireServer(adapter.startWire);
    const model = (retry?: RetryOptions): Model => adapter.model(server.url, retry);
    describeToolRounds(adapter, server, model);
    describeRetries(adapter, server, model);
    describeErrors(adapter, server, model);
    describeCancellation(adapter, server, model);
  });
}

type Build = (retry?: RetryOptions) => Model;

const PARIS: ConformanceCall = { id: 'call_abc', name: 'get_weather', args: { city: 'Paris' } };

function describeToolRounds(adapter: ConformanceAdapter, server: ScriptedWireServer, model: Build): void {
  it('runs a two-turn tool call: tools out, the call id kept, the tool result sent back by id', async () => {
    const m = model();
    server.reply(adapter.reply.answer({ calls: [PARIS] }));
    const ask: Content = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
    const first = await m.generate(
      modelRequest({ systemInstruction: 'You are terse.', contents: [ask], tools: [WEATHER_TOOL, NOW_TOOL] }),
    );
    expect(first.content).toEqual({ role: 'model', parts: [{ functionCall: PARIS }] });
    expect(first.finishReason).toBe('STOP');
    const sent = server.requests[0];
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe(adapter.callPath);
    expect(sent && adapter.keySent(sent)).toBe(adapter.key);

    server.reply(adapter.reply.answer({ text: 'Sunny in Paris.' }));
    const result: Content = {
      role: 'user',
      parts: [{ functionResponse: { id: 'call_abc', name: 'get_weather', response: { forecast: 'sunny' } } }],
    };
    const second = await m.generate(
      modelRequest({ tools: [WEATHER_TOOL], contents: [ask, first.content, result] }),
    );
    expect(textOf(second.content)).toBe('Sunny in Paris.');
    expect(server.count).toBe(2);
    adapter.expectSent.toolRound(sent as RecordedRequest, server.requests[1] as RecordedRequest);
  });

  it('returns two calls of one turn with their ids and sends both results back, in order', async () => {
    const calls: ConformanceCall[] = [
      { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } },
      { id: 'call_2', name: 'get_weather', args: { city: 'Oslo' } },
    ];
    server.reply(adapter.reply.answer({ text: 'Checking both.', calls }));
    const m = model();
    const first = await m.generate(modelRequest({ tools: [WEATHER_TOOL] }));
    expect(first.content.parts).toEqual([
      { text: 'Checking both.' },
      ...calls.map((functionCall) => ({ functionCall })),
    ]);

    server.reply(adapter.reply.answer({ text: 'Paris sunny, Oslo snowy.' }));
    const resultOf = (id: string, w: string): Content => ({
      role: 'user',
      parts: [{ functionResponse: { id, name: 'get_weather', response: { w } } }],
    });
    await m.generate(
      modelRequest({
        tools: [WEATHER_TOOL],
        contents: [
          { role: 'user', parts: [{ text: 'Paris and Oslo?' }] },
          first.content,
          // ADK may store the two results as one content or as two; the wire gets both, in order.
          resultOf('call_1', 'sunny'),
          resultOf('call_2', 'snowy'),
          { role: 'user', parts: [{ text: 'Be brief.' }] },
        ],
      }),
    );
    adapter.expectSent.twoResults(server.requests[1] as RecordedRequest);
  });

  it('streams text deltas as partials in order and surfaces each tool call only once whole', async () => {
    server.reply(
      adapter.reply.stream({
        text: ['Let me ', 'check ', 'that.'],
        calls: [
          { id: 'call_s1', name: 'get_weather', argChunks: ['{"ci', 'ty": "Pa', 'ris"}'] },
          { id: 'call_s2', name: 'now', argChunks: [] },
        ],
      }),
    );
    const partials: Content[] = [];
    const res = await model().generate(modelRequest({ tools: [WEATHER_TOOL, NOW_TOOL] }), {
      onPartial: (p) => partials.push(p),
    });
    const calls = [
      { functionCall: { id: 'call_s1', name: 'get_weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'call_s2', name: 'now', args: {} } },
    ];
    const hasCall = (p: Content): boolean => p.parts.some((part) => part.functionCall);
    const firstCall = partials.findIndex(hasCall);
    expect(firstCall).toBeGreaterThan(0);
    expect(partials.slice(0, firstCall).map((p) => p.parts)).toEqual([
      [{ text: 'Let me ' }],
      [{ text: 'check ' }],
      [{ text: 'that.' }],
    ]);
    expect(partials.slice(firstCall).flatMap((p) => p.parts)).toEqual(calls);
    expect(res.content.parts).toEqual([{ text: 'Let me check that.' }, ...calls]);
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual(adapter.streamUsage);
    adapter.expectSent.stream(server.requests[0] as RecordedRequest, partials.slice(firstCall));
  });
}

function describeRetries(adapter: ConformanceAdapter, server: ScriptedWireServer, model: Build): void {
  it.each([429, 503])(
    'retries a %i after its retry-after seconds rather than its own (1–50 ms) backoff, then returns the answer',
    async (status) => {
      server.reply(
        adapter.reply.error(status, 'Try again later', { 'retry-after': '1' }),
        adapter.reply.answer({ text: 'after waiting' }),
      );
      const started = Date.now();
      const res = await model({ maxBackoffMs: 5000 }).generate(modelRequest());
      expect(textOf(res.content)).toBe('after waiting');
      expect(server.count).toBe(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    },
  );

  it('retries a dropped connection', async () => {
    server.reply({ kind: 'drop' }, adapter.reply.answer({ text: 'reconnected' }));
    expect(textOf((await model().generate(modelRequest())).content)).toBe('reconnected');
    expect(server.count).toBe(2);
  });

  const cutStream = adapter.reply.cutStream;
  if (cutStream) {
    it('retries a stream cut before its end and surfaces no tool call of the cut stream', async () => {
      server.reply(
        cutStream('half', { id: 'call_c', name: 'now' }),
        adapter.reply.stream({ text: ['whole'], calls: [] }),
      );
      const partials: Content[] = [];
      const res = await model().generate(modelRequest({ tools: [NOW_TOOL] }), {
        onPartial: (p) => partials.push(p),
      });
      expect(textOf(res.content)).toBe('whole');
      expect(partials.some((p) => p.parts.some((part) => part.functionCall))).toBe(false);
      expect(server.count).toBe(2);
    });
  }

  it.each([500, 503])(
    'gives up after maxAttempts on %i with a retryable MODEL_ERROR (the SDK does not retry too)',
    async (status) => {
      for (let i = 0; i < 5; i++) server.reply(adapter.reply.error(status, 'The server is overloaded'));
      const err = await failure(model({ maxAttempts: 3 }).generate(modelRequest()));
      expect(err.code).toBe('MODEL_ERROR');
      expect(err.retryable).toBe(true);
      expect(err.details).toEqual({ status, model: adapter.modelId });
      expect(err.message).toContain(String(status));
      expect(err.message).toContain('The server is overloaded');
      expect(server.count).toBe(3);
    },
  );
}

function describeErrors(adapter: ConformanceAdapter, server: ScriptedWireServer, model: Build): void {
  it('fails a 400 at once with a clear error naming provider, model and the provider’s message, never the key', async () => {
    server.reply(
      adapter.reply.error(400, "Invalid value for 'temperature': must be <= 2."),
      adapter.reply.answer({ text: 'never' }),
    );
    const err = await failure(model().generate(modelRequest({ generateContentConfig: { temperature: 9 } })));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(adapter.provider);
    expect(err.message).toContain(`'${adapter.modelId}'`);
    expect(err.message).toContain('400');
    expect(err.message).toContain("Invalid value for 'temperature'");
    expect(err.details).toMatchObject({ status: 400 });
    expect(err.cause).toBeInstanceOf(Error);
    expect(JSON.stringify({ message: err.message, details: err.details, json: err.toJSON() })).not.toContain(
      adapter.key,
    );
    expect(server.count).toBe(1);
  });

  it('redacts the key when the provider’s 401 message echoes it', async () => {
    server.reply(adapter.reply.error(401, `Incorrect API key provided: ${adapter.key}.`));
    const err = await failure(model().generate(modelRequest()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('401');
    expect(err.message).toContain('[redacted]');
    expect(`${err.message} ${JSON.stringify(err.details)} ${(err.cause as Error).message}`).not.toContain(
      adapter.key,
    );
    expect(server.count).toBe(1);
  });
}

function describeCancellation(adapter: ConformanceAdapter, server: ScriptedWireServer, model: Build): void {
  it.each([
    ['a call', false],
    ['a streamed call', true],
  ])(
    'cancels %s: the signal aborts the HTTP request in flight (the server sees the socket close) → CANCELLED',
    async (_what, streamed) => {
      server.reply({ kind: 'hang' });
      const controller = new AbortController();
      const request = modelRequest({ signal: controller.signal });
      const pending = model().generate(request, streamed ? { onPartial: () => undefined } : undefined);
      await waitFor(() => server.count === 1, { what: 'the request to arrive' });
      controller.abort();
      const err = await failure(pending);
      expect(err.code).toBe('CANCELLED');
      await waitFor(() => server.requests[0]?.closedBeforeAnswer, {
        what: 'the server to see the socket close',
      });
    },
  );

  it('rejects with CANCELLED without calling the server when the signal is already aborted', async () => {
    server.reply(adapter.reply.answer({ text: 'never' }));
    const controller = new AbortController();
    controller.abort();
    const err = await failure(model().generate(modelRequest({ signal: controller.signal })));
    expect(err.code).toBe('CANCELLED');
    expect(server.count).toBe(0);
  });

  it('rejects with CANCELLED when aborted while backing off', async () => {
    server.reply(
      adapter.reply.error(429, 'Rate limit reached', { 'retry-after': '30' }),
      adapter.reply.answer({ text: 'never' }),
    );
    const controller = new AbortController();
    const pending = model({ maxBackoffMs: 60_000 }).generate(modelRequest({ signal: controller.signal }));
    // The server answers the 429 as the request arrives; the client then backs off for 30 s.
    await waitFor(() => server.count === 1, { what: 'the 429 to be answered' });
    controller.abort();
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
    expect(server.count).toBe(1);
  });
}
