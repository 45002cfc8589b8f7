/**
 * The Gemini adapter through the real @google/genai client (`httpOptions.baseUrl`) against a local server
 * speaking Gemini's REST wire format (test/support/wire/gemini-wire.ts): the provider conformance suite, then what is
 * Gemini's own (call ids made up when the wire has none, the request's model, systemInstruction and
 * generationConfig, JSON output, RetryInfo, the API key requirement). The server records every request.
 */
import { describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import type { Content } from '../../src/core/content.js';
import { Gemini, type GeminiOptions } from '../../src/models/index.js';
import {
  geminiAnswer,
  geminiError,
  geminiResponse,
  geminiStream,
  startGeminiWire,
} from '../support/wire/gemini-wire.js';
import { modelRequest, textOf } from '../fixtures/model-calls.js';
import {
  describeProviderConformance,
  useWireServer,
  type ConformanceAdapter,
} from '../support/scenarios/provider-conformance.js';

const KEY = 'AIza-test-3e5f7a9c1b2d4f6a8c0e';

/** A Gemini model against the scripted server at `url`, backing off 1–50 ms unless `options` say otherwise. */
function geminiAt(url: string, options: Partial<GeminiOptions> = {}): Gemini {
  return new Gemini({
    model: 'gemini-test',
    apiKey: KEY,
    httpOptions: { baseUrl: url },
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

/** Google's status name for an HTTP status. */
function statusName(status: number): string {
  const names: Record<number, string> = {
    401: 'UNAUTHENTICATED',
    429: 'RESOURCE_EXHAUSTED',
    500: 'INTERNAL',
    503: 'UNAVAILABLE',
  };
  return names[status] ?? 'INVALID_ARGUMENT';
}

/** The parts of a request's `contents[index]`. */
const partsOf = (body: Record<string, unknown>, index: number): unknown =>
  (body.contents as { parts: unknown[] }[])[index]?.parts;

const conformance: ConformanceAdapter = {
  provider: 'Gemini',
  modelId: 'gemini-test',
  key: KEY,
  startWire: startGeminiWire,
  model: (url, retry) => geminiAt(url, retry),
  keySent: (request) => request.headers['x-goog-api-key'] as string | undefined,
  callPath: '/v1beta/models/gemini-test:generateContent',
  reply: {
    answer: ({ text, calls }) =>
      geminiAnswer([
        ...(text === undefined ? [] : [{ text }]),
        ...(calls ?? []).map((c) => ({ functionCall: c })),
      ]),
    // Gemini streams whole parts: the calls come in the last chunk, with the finish reason and the usage.
    stream: ({ text, calls }) =>
      geminiStream([
        ...text.map((t) => geminiResponse([{ text: t }])),
        geminiResponse(
          calls.map(({ id, name, argChunks }) => ({
            functionCall: { id, name, args: JSON.parse(argChunks.join('') || '{}') as unknown },
          })),
          { finishReason: 'STOP', usage: { prompt: 5, candidates: 4, cached: 2 } },
        ),
      ]),
    error: (status, message, headers) => geminiError(status, message, statusName(status), { headers }),
  },
  streamUsage: { promptTokens: 5, outputTokens: 4, totalTokens: 9, cachedTokens: 2 },
  expectSent: {
    toolRound(first, second) {
      expect(first.body).toMatchObject({
        systemInstruction: { parts: [{ text: 'You are terse.' }] },
        contents: [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }],
        tools: [
          {
            functionDeclarations: [
              { name: 'get_weather', description: 'Weather of a city' },
              { name: 'now', description: 'The current time' },
            ],
          },
        ],
      });
      expect(second.body).toMatchObject({
        contents: [
          { role: 'user' },
          { role: 'model', parts: [{ functionCall: { id: 'call_abc', name: 'get_weather' } }] },
          {
            role: 'user',
            parts: [
              { functionResponse: { id: 'call_abc', name: 'get_weather', response: { forecast: 'sunny' } } },
            ],
          },
        ],
      });
    },
    twoResults(sent) {
      // Contents go out as they are: one per result, each carrying its call's id.
      const roles = (sent.body.contents as { role: string }[]).map((c) => c.role);
      expect(roles).toEqual(['user', 'model', 'user', 'user', 'user']);
      expect(partsOf(sent.body, 2)).toMatchObject([
        { functionResponse: { id: 'call_1', response: { w: 'sunny' } } },
      ]);
      expect(partsOf(sent.body, 3)).toMatchObject([
        { functionResponse: { id: 'call_2', response: { w: 'snowy' } } },
      ]);
      expect(partsOf(sent.body, 4)).toEqual([{ text: 'Be brief.' }]);
    },
    stream(sent, callPartials) {
      expect(sent.path).toBe('/v1beta/models/gemini-test:streamGenerateContent');
      expect(sent.query.get('alt')).toBe('sse');
      expect(callPartials).toHaveLength(1);
    },
  },
};

describeProviderConformance(conformance);

const server = useWireServer(startGeminiWire);

const gemini = (options: Partial<GeminiOptions> = {}): Gemini => geminiAt(server.url, options);

describe('Gemini over a local Gemini REST server', () => {
  it('returns plain text with finish reason and usage, sending contents and the API key', async () => {
    server.reply(geminiAnswer([{ text: 'Hello there' }]));
    const res = await gemini().generate(modelRequest());
    expect(res.content).toEqual({ role: 'model', parts: [{ text: 'Hello there' }] });
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual({ promptTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(server.count).toBe(1);
    expect(server.requests[0]?.method).toBe('POST');
    expect(server.requests[0]?.path).toBe('/v1beta/models/gemini-test:generateContent');
    expect(server.requests[0]?.headers['x-goog-api-key']).toBe(KEY);
    expect(server.requests[0]?.body).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  it('uses the request model over the default one', async () => {
    server.reply(geminiAnswer([{ text: 'ok' }]));
    await gemini().generate(modelRequest({ model: 'gemini-other' }));
    expect(server.requests[0]?.path).toBe('/v1beta/models/gemini-other:generateContent');
  });

  it('round-trips a function call the wire sent without an id: a call_ id made up, declarations out, the response sent back by it', async () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const tools = [{ name: 'get_weather', description: 'Weather of a city', parameters }];
    server.reply(geminiAnswer([{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }]));
    const model = gemini();
    const first = await model.generate(modelRequest({ tools }));
    const call = first.content.parts[0]?.functionCall;
    expect(call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
    expect(call?.id).toMatch(/^call_/);
    expect(server.requests[0]?.body).toMatchObject({
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather of a city' }] }],
    });
    const declared = (
      server.requests[0]?.body.tools as { functionDeclarations: Record<string, unknown>[] }[]
    )[0]?.functionDeclarations[0];
    expect(declared?.parametersJsonSchema ?? declared?.parameters).toEqual(parameters);

    server.reply(geminiAnswer([{ text: 'Sunny in Paris.' }]));
    const functionResponse = { id: call?.id, name: 'get_weather', response: { forecast: 'sunny' } };
    const second = await model.generate(
      modelRequest({
        tools,
        contents: [
          { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
          first.content,
          { role: 'user', parts: [{ functionResponse }] },
        ],
      }),
    );
    expect(textOf(second.content)).toBe('Sunny in Paris.');
    expect(server.count).toBe(2);
    expect(server.requests[1]?.body).toMatchObject({
      contents: [
        { role: 'user' },
        { role: 'model', parts: [{ functionCall: { id: call?.id, name: 'get_weather' } }] },
        { role: 'user', parts: [{ functionResponse }] },
      ],
    });
  });

  it('sends the system instruction and passes generateContentConfig through', async () => {
    server.reply(geminiAnswer([{ text: 'ok' }]));
    await gemini().generate(
      modelRequest({ systemInstruction: 'You are terse.', generateContentConfig: { temperature: 0.25 } }),
    );
    expect(server.requests[0]?.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      generationConfig: { temperature: 0.25 },
    });
  });

  it('asks for JSON with the response schema, offers no tools then, and returns the JSON text', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
    server.reply(geminiAnswer([{ text: '{"title":"Dune"}' }]));
    const res = await gemini().generate(
      modelRequest({
        responseSchema: schema,
        tools: [{ name: 'search', description: 'Search' }],
      }),
    );
    expect(JSON.parse(textOf(res.content))).toEqual({ title: 'Dune' });
    const body = server.requests[0]?.body;
    expect(body).toMatchObject({ generationConfig: { responseMimeType: 'application/json' } });
    const config = body?.generationConfig as Record<string, unknown>;
    expect(config.responseJsonSchema ?? config.responseSchema).toEqual(schema);
    expect(body?.tools).toBeUndefined();
  });

  it('waits the RetryInfo retryDelay of a 429 even when it exceeds the jittered backoff', async () => {
    server.reply(
      geminiError(429, 'Resource has been exhausted', 'RESOURCE_EXHAUSTED', {
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '0.2s' }],
      }),
      geminiAnswer([{ text: 'after retry info' }]),
    );
    const started = Date.now();
    const res = await gemini({ maxBackoffMs: 1000 }).generate(modelRequest());
    expect(textOf(res.content)).toBe('after retry info');
    expect(server.count).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('streams partials to onPartial and aggregates them into one content, keeping a made-up call id', async () => {
    const usage = { prompt: 5, candidates: 4 };
    server.reply(
      geminiStream([
        geminiResponse([{ text: 'Once ' }], { usage }),
        geminiResponse([{ text: 'upon ' }], { usage }),
        geminiResponse(
          [{ text: 'a time.' }, { functionCall: { name: 'remember', args: { what: 'story' } } }],
          {
            finishReason: 'STOP',
            usage,
          },
        ),
      ]),
    );
    const partials: Content[] = [];
    const res = await gemini().generate(modelRequest(), { onPartial: (p) => partials.push(p) });
    expect(server.requests[0]?.path).toBe('/v1beta/models/gemini-test:streamGenerateContent');
    expect(server.requests[0]?.query.get('alt')).toBe('sse');
    expect(partials.length).toBeGreaterThanOrEqual(2);
    const partialText = partials.map(textOf).join('');
    expect(partialText).toBe('Once upon a time.');
    expect(res.content.parts[0]).toEqual({ text: partialText });
    const call = res.content.parts[1]?.functionCall;
    expect(call).toMatchObject({ name: 'remember', args: { what: 'story' } });
    expect(call?.id).toMatch(/^call_/);
    expect(partials[2]?.parts[1]?.functionCall?.id).toBe(call?.id);
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual({ promptTokens: 5, outputTokens: 4, totalTokens: 9 });
  });

  it('requires an API key unless vertexai is set', () => {
    let caught: unknown;
    try {
      new Gemini({ model: 'gemini-test' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AgentloomError);
    expect((caught as AgentloomError).code).toBe('CONFIG');
    expect((caught as AgentloomError).message).toContain('GEMINI_API_KEY');
    expect(
      () => new Gemini({ model: 'gemini-test', vertexai: true, project: 'p', location: 'us-central1' }),
    ).not.toThrow();
  });
});
