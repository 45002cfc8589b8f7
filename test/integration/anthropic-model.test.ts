/**
 * AnthropicModel through the official `@anthropic-ai/sdk` against a local server speaking Anthropic's Messages
 * wire format (test/support/wire/anthropic-wire.ts): the provider conformance suite, then what is Anthropic's own
 * (thinking blocks, stop reasons, setting names, structured output through a forced tool, 529). The server
 * records each request, so the tests assert what the SDK sent (system, tools with input_schema, tool_use /
 * tool_result blocks, alternation) as well as what the adapter made of the answers.
 */
import { describe, expect, it } from 'vitest';
import { AnthropicModel, createModelForId, type AnthropicModelOptions } from '../../src/models/index.js';
import {
  anthropicError,
  anthropicMessage,
  anthropicStream,
  startAnthropicWire,
  type RecordedRequest,
  type ScriptedBlock,
} from '../support/wire/anthropic-wire.js';
import { modelRequest, textOf, WEATHER_TOOL } from '../fixtures/model-calls.js';
import {
  describeProviderConformance,
  useWireServer,
  type ConformanceAdapter,
} from '../support/scenarios/provider-conformance.js';

const KEY = 'sk-ant-test-9d8c7b6a5f4e3d2c1b0a';

/** An AnthropicModel against the scripted server at `url`, backing off 1–50 ms unless `options` say otherwise. */
function anthropicAt(url: string, options: Partial<AnthropicModelOptions> = {}): AnthropicModel {
  return new AnthropicModel({
    model: 'claude-test',
    apiKey: KEY,
    baseURL: url,
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

/** The key as the SDK sends it: `x-api-key`, or (as @anthropic-ai/sdk 1.x does) `Authorization: Bearer`. */
function keySent(request: RecordedRequest | undefined): string | undefined {
  const bearer = request?.headers.authorization?.replace(/^Bearer /, '');
  return (request?.headers['x-api-key'] as string | undefined) ?? bearer;
}

/** Anthropic's error type for a status, as its API sends them. */
function errorType(status: number): string {
  const types: Record<number, string> = {
    401: 'authentication_error',
    429: 'rate_limit_error',
    500: 'api_error',
    503: 'overloaded_error',
    529: 'overloaded_error',
  };
  return types[status] ?? 'invalid_request_error';
}

const conformance: ConformanceAdapter = {
  provider: 'Anthropic',
  modelId: 'claude-test',
  key: KEY,
  startWire: startAnthropicWire,
  model: (url, retry) => anthropicAt(url, retry),
  keySent,
  callPath: '/v1/messages',
  reply: {
    answer: ({ text, calls }) =>
      anthropicMessage({
        blocks: [
          ...(text === undefined ? [] : [{ text }]),
          ...(calls ?? []).map((c): ScriptedBlock => ({
            toolUse: { id: c.id, name: c.name, input: c.args },
          })),
        ],
      }),
    stream: ({ text, calls }) =>
      anthropicStream({
        blocks: [
          { text },
          ...calls.map((c) => ({ toolUse: { id: c.id, name: c.name, jsonChunks: c.argChunks } })),
        ],
        usage: { input: 8, output: 30, cacheRead: 1024, cacheCreation: 16 },
      }),
    cutStream: (text, call) =>
      anthropicStream({
        blocks: [{ text: [text] }, { toolUse: { ...call, jsonChunks: ['{"a'] } }],
        cut: true,
      }),
    error: (status, message, headers) => anthropicError(status, errorType(status), message, headers),
  },
  streamUsage: { promptTokens: 1048, outputTokens: 30, totalTokens: 1078, cachedTokens: 1024 },
  expectSent: {
    toolRound(first, second) {
      expect(first.headers['anthropic-version']).toBeDefined();
      expect(first.body).toEqual({
        model: 'claude-test',
        max_tokens: 4096,
        stream: false,
        system: 'You are terse.',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] }],
        tools: [
          { name: 'get_weather', description: 'Weather of a city', input_schema: WEATHER_TOOL.parameters },
          { name: 'now', description: 'The current time', input_schema: { type: 'object', properties: {} } },
        ],
      });
      expect(second.body.messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'call_abc', name: 'get_weather', input: { city: 'Paris' } }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_abc', content: '{"forecast":"sunny"}' }],
        },
      ]);
    },
    twoResults(sent) {
      // Same-role contents are merged: both results and the text after them make one user turn.
      const messages = sent.body.messages as { role: string; content: unknown[] }[];
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(messages[2]?.content).toEqual([
        { type: 'tool_result', tool_use_id: 'call_1', content: '{"w":"sunny"}' },
        { type: 'tool_result', tool_use_id: 'call_2', content: '{"w":"snowy"}' },
        { type: 'text', text: 'Be brief.' },
      ]);
    },
    stream(sent, callPartials) {
      expect(sent.body.stream).toBe(true);
      // Each call is whole at its content_block_stop: one partial per call.
      expect(callPartials.map((p) => p.parts.length)).toEqual([1, 1]);
    },
  },
};

describeProviderConformance(conformance);

const server = useWireServer(startAnthropicWire);

const anthropic = (options: Partial<AnthropicModelOptions> = {}): AnthropicModel =>
  anthropicAt(server.url, options);

describe('AnthropicModel over a local Messages server', () => {
  it('returns thinking as a signed thought and sends it back as a thinking block; unsigned thoughts are left out', async () => {
    server.reply(
      anthropicMessage({
        blocks: [
          { thinking: 'Paris first.', signature: 'sig-1' },
          { toolUse: { id: 'toolu_t', name: 'get_weather', input: { city: 'Paris' } } },
        ],
      }),
    );
    const model = anthropic();
    const first = await model.generate(modelRequest({ tools: [WEATHER_TOOL] }));
    expect(first.content.parts[0]).toEqual({
      text: 'Paris first.',
      thought: true,
      thoughtSignature: 'sig-1',
    });

    server.reply(anthropicMessage({ blocks: [{ text: 'Sunny.' }] }));
    await model.generate(
      modelRequest({
        tools: [WEATHER_TOOL],
        contents: [
          { role: 'user', parts: [{ text: 'Weather?' }] },
          { role: 'model', parts: [{ text: 'an unsigned thought of another model', thought: true }] },
          { role: 'user', parts: [{ text: 'In Paris.' }] },
          first.content,
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'toolu_t', name: 'get_weather', response: { w: 'sun' } } }],
          },
        ],
      }),
    );
    const messages = server.requests[1]?.body.messages as { role: string; content: unknown[] }[];
    // The turn holding only the unsigned thought is dropped, and the user turns around it merged.
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[0]?.content).toEqual([
      { type: 'text', text: 'Weather?' },
      { type: 'text', text: 'In Paris.' },
    ]);
    expect(messages[1]?.content[0]).toEqual({
      type: 'thinking',
      thinking: 'Paris first.',
      signature: 'sig-1',
    });
  });

  it('reports usage with cache reads, and maps the stop reasons to Gemini’s', async () => {
    server.reply(
      anthropicMessage({
        blocks: [{ text: 'cut' }],
        stopReason: 'max_tokens',
        usage: { input: 20, output: 7, cacheRead: 2048 },
      }),
    );
    const res = await anthropic().generate(modelRequest());
    expect(res.usage).toEqual({ promptTokens: 2068, outputTokens: 7, totalTokens: 2075, cachedTokens: 2048 });
    expect(res.finishReason).toBe('MAX_TOKENS');
    server.reply(anthropicMessage({ blocks: [], stopReason: 'refusal' }));
    expect((await anthropic().generate(modelRequest())).finishReason).toBe('SAFETY');
  });

  it('passes generation settings through with their Anthropic names (max_tokens overridable)', async () => {
    server.reply(anthropicMessage({ blocks: [{ text: 'ok' }] }));
    const generateContentConfig = {
      temperature: 0.2,
      topP: 0.9,
      topK: 40,
      maxOutputTokens: 256,
      stopSequences: ['END'],
      safetySettings: [],
    };
    await anthropic().generate(modelRequest({ generateContentConfig }));
    const body = server.requests[0]?.body;
    expect(body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      max_tokens: 256,
      stop_sequences: ['END'],
    });
    expect(body).not.toHaveProperty('safetySettings');
  });

  it('answers structured output through a forced tool whose input comes back as the JSON text', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
    server.reply(
      anthropicMessage({
        blocks: [{ toolUse: { id: 'toolu_so', name: 'structured_output', input: { title: 'Dune' } } }],
      }),
    );
    const res = await anthropic().generate(modelRequest({ responseSchema: schema, tools: [WEATHER_TOOL] }));
    expect(res.content.parts).toEqual([{ text: '{"title":"Dune"}' }]);
    expect(res.finishReason).toBe('STOP');
    const body = server.requests[0]?.body;
    expect(body?.tools).toEqual([
      { name: 'structured_output', description: expect.any(String) as unknown, input_schema: schema },
    ]);
    expect(body?.tool_choice).toEqual({ type: 'tool', name: 'structured_output' });
  });

  it('wraps a non-object response schema in { value } and unwraps the answer', async () => {
    const schema = { type: 'array', items: { type: 'string' } };
    server.reply(
      anthropicMessage({
        blocks: [{ toolUse: { id: 'toolu_a', name: 'structured_output', input: { value: ['a', 'b'] } } }],
      }),
    );
    const res = await anthropic().generate(modelRequest({ responseSchema: schema }));
    expect(JSON.parse(textOf(res.content))).toEqual(['a', 'b']);
    const tools = server.requests[0]?.body.tools as { input_schema: unknown }[];
    expect(tools[0]?.input_schema).toEqual({
      type: 'object',
      properties: { value: schema },
      required: ['value'],
    });
  });

  it('retries 529 overloaded, then a dropped connection', async () => {
    server.reply(
      anthropicError(529, 'overloaded_error', 'Overloaded'),
      { kind: 'drop' },
      anthropicMessage({ blocks: [{ text: 'third time' }] }),
    );
    expect(textOf((await anthropic().generate(modelRequest())).content)).toBe('third time');
    expect(server.count).toBe(3);
  });

  it('is built from anthropic/<model> with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY', async () => {
    server.reply(anthropicMessage({ blocks: [{ text: 'hello' }] }));
    const model = createModelForId('anthropic/claude-sonnet-4-6', {
      ANTHROPIC_API_KEY: KEY,
      ANTHROPIC_BASE_URL: server.url,
    });
    expect(textOf((await model.generate(modelRequest())).content)).toBe('hello');
    expect(server.requests[0]?.body.model).toBe('claude-sonnet-4-6');
    expect(keySent(server.requests[0])).toBe(KEY);
  });
});
