/**
 * AnthropicModel through the official `@anthropic-ai/sdk` against a local server speaking Anthropic's Messages
 * wire format (test/support/anthropic-wire.ts). The server records each request, so the tests assert what the
 * SDK sent (system, tools with input_schema, tool_use / tool_result blocks, alternation) as well as what the
 * adapter made of the answers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Content } from '../../src/core/content.js';
import { AnthropicModel, createModelForId, type AnthropicModelOptions } from '../../src/models/index.js';
import {
  anthropicError,
  anthropicMessage,
  anthropicStream,
  startAnthropicWire,
  type ScriptedWireServer,
} from '../support/anthropic-wire.js';
import { waitFor } from '../support/wait-for.js';
import { failure, modelRequest, NOW_TOOL, textOf, WEATHER_TOOL } from '../support/model-calls.js';

const KEY = 'sk-ant-test-9d8c7b6a5f4e3d2c1b0a';

let server: ScriptedWireServer;

beforeAll(async () => {
  server = await startAnthropicWire();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.reset();
});

function anthropic(options: Partial<AnthropicModelOptions> = {}): AnthropicModel {
  return new AnthropicModel({
    model: 'claude-test',
    apiKey: KEY,
    baseURL: server.url,
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

/** The key as the SDK sends it: `x-api-key`, or (as @anthropic-ai/sdk 1.x does) `Authorization: Bearer`. */
function keySent(headers: IncomingHttpHeaders | undefined): string | undefined {
  const bearer = headers?.authorization?.replace(/^Bearer /, '');
  return (headers?.['x-api-key'] as string | undefined) ?? bearer;
}

describe('AnthropicModel over a local Messages server', () => {
  it('runs a two-turn tool call: system and input_schema out, the tool_use id kept, the tool_result sent back by id', async () => {
    const model = anthropic();
    server.reply(
      anthropicMessage({
        blocks: [{ toolUse: { id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } } }],
      }),
    );
    const ask: Content = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
    const first = await model.generate(
      modelRequest({ systemInstruction: 'You are terse.', contents: [ask], tools: [WEATHER_TOOL, NOW_TOOL] }),
    );
    expect(first.content).toEqual({
      role: 'model',
      parts: [{ functionCall: { id: 'toolu_01', name: 'get_weather', args: { city: 'Paris' } } }],
    });
    expect(first.finishReason).toBe('STOP');
    const sent = server.requests[0];
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/messages');
    expect(keySent(sent?.headers)).toBe(KEY);
    expect(sent?.headers['anthropic-version']).toBeDefined();
    expect(sent?.body).toEqual({
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

    server.reply(anthropicMessage({ blocks: [{ text: 'Sunny in Paris.' }] }));
    const result: Content = {
      role: 'user',
      parts: [{ functionResponse: { id: 'toolu_01', name: 'get_weather', response: { forecast: 'sunny' } } }],
    };
    const second = await model.generate(
      modelRequest({ tools: [WEATHER_TOOL], contents: [ask, first.content, result] }),
    );
    expect(textOf(second.content)).toBe('Sunny in Paris.');
    expect(server.requests[1]?.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '{"forecast":"sunny"}' }],
      },
    ]);
  });

  it('returns two calls of one turn and sends both results in one user turn, merging same-role contents', async () => {
    server.reply(
      anthropicMessage({
        blocks: [
          { text: 'Checking both.' },
          { toolUse: { id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } } },
          { toolUse: { id: 'toolu_2', name: 'get_weather', input: { city: 'Oslo' } } },
        ],
      }),
    );
    const model = anthropic();
    const first = await model.generate(modelRequest({ tools: [WEATHER_TOOL] }));
    expect(first.content.parts).toEqual([
      { text: 'Checking both.' },
      { functionCall: { id: 'toolu_1', name: 'get_weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'toolu_2', name: 'get_weather', args: { city: 'Oslo' } } },
    ]);

    server.reply(anthropicMessage({ blocks: [{ text: 'Paris sunny, Oslo snowy.' }] }));
    await model.generate(
      modelRequest({
        tools: [WEATHER_TOOL],
        contents: [
          { role: 'user', parts: [{ text: 'Paris and Oslo?' }] },
          first.content,
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'toolu_1', name: 'get_weather', response: { w: 'sunny' } } }],
          },
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'toolu_2', name: 'get_weather', response: { w: 'snowy' } } }],
          },
          { role: 'user', parts: [{ text: 'Be brief.' }] },
        ],
      }),
    );
    const messages = server.requests[1]?.body.messages as { role: string; content: unknown[] }[];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[2]?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"w":"sunny"}' },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: '{"w":"snowy"}' },
      { type: 'text', text: 'Be brief.' },
    ]);
  });

  it('streams text deltas as partials in order and surfaces a tool call only at its content_block_stop, whole', async () => {
    server.reply(
      anthropicStream({
        blocks: [
          { text: ['Let me ', 'check ', 'that.'] },
          { toolUse: { id: 'toolu_s1', name: 'get_weather', jsonChunks: ['{"ci', 'ty": "Pa', 'ris"}'] } },
          { toolUse: { id: 'toolu_s2', name: 'now', jsonChunks: [] } },
        ],
        usage: { input: 8, output: 30, cacheRead: 1024, cacheCreation: 16 },
      }),
    );
    const partials: Content[] = [];
    const res = await anthropic().generate(modelRequest({ tools: [WEATHER_TOOL, NOW_TOOL] }), {
      onPartial: (p) => partials.push(p),
    });
    expect(server.requests[0]?.body.stream).toBe(true);
    expect(partials.map((p) => p.parts)).toEqual([
      [{ text: 'Let me ' }],
      [{ text: 'check ' }],
      [{ text: 'that.' }],
      [{ functionCall: { id: 'toolu_s1', name: 'get_weather', args: { city: 'Paris' } } }],
      [{ functionCall: { id: 'toolu_s2', name: 'now', args: {} } }],
    ]);
    expect(res.content.parts).toEqual([
      { text: 'Let me check that.' },
      { functionCall: { id: 'toolu_s1', name: 'get_weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'toolu_s2', name: 'now', args: {} } },
    ]);
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual({
      promptTokens: 1048,
      outputTokens: 30,
      totalTokens: 1078,
      cachedTokens: 1024,
    });
  });

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

  it('retries a 429 after its retry-after seconds, then returns the answer', async () => {
    server.reply(
      anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your rate limit', {
        'retry-after': '1',
      }),
      anthropicMessage({ blocks: [{ text: 'after waiting' }] }),
    );
    const started = Date.now();
    const res = await anthropic({ maxBackoffMs: 5000 }).generate(modelRequest());
    expect(textOf(res.content)).toBe('after waiting');
    expect(server.count).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('retries 529 overloaded, a dropped connection and a stream cut before message_stop', async () => {
    server.reply(
      anthropicError(529, 'overloaded_error', 'Overloaded'),
      { kind: 'drop' },
      anthropicMessage({ blocks: [{ text: 'third time' }] }),
    );
    expect(textOf((await anthropic().generate(modelRequest())).content)).toBe('third time');
    expect(server.count).toBe(3);
    server.reset();
    server.reply(
      anthropicStream({
        blocks: [{ toolUse: { id: 'toolu_c', name: 'now', jsonChunks: ['{"a'] } }],
        cut: true,
      }),
      anthropicStream({ blocks: [{ text: ['whole'] }] }),
    );
    const partials: Content[] = [];
    const res = await anthropic().generate(modelRequest({ tools: [NOW_TOOL] }), {
      onPartial: (p) => partials.push(p),
    });
    expect(textOf(res.content)).toBe('whole');
    expect(partials.some((p) => p.parts.some((part) => part.functionCall))).toBe(false);
    expect(server.count).toBe(2);
  });

  it('fails a 400 at once with a clear error naming provider, model and the provider’s message, never the key', async () => {
    server.reply(anthropicError(400, 'invalid_request_error', 'max_tokens: Field required'));
    const err = await failure(anthropic().generate(modelRequest()));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('Anthropic');
    expect(err.message).toContain("'claude-test'");
    expect(err.message).toContain('400');
    expect(err.message).toContain('max_tokens: Field required');
    expect(err.details).toMatchObject({ status: 400 });
    expect(JSON.stringify({ message: err.message, details: err.details, json: err.toJSON() })).not.toContain(
      KEY,
    );
    expect(server.count).toBe(1);
  });

  it('redacts the key when the provider’s 401 message echoes it', async () => {
    server.reply(anthropicError(401, 'authentication_error', `invalid x-api-key: ${KEY}`));
    const err = await failure(anthropic().generate(modelRequest()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('[redacted]');
    expect(`${err.message} ${JSON.stringify(err.details)} ${(err.cause as Error).message}`).not.toContain(
      KEY,
    );
    expect(server.count).toBe(1);
  });

  it('cancels: the signal aborts the HTTP request in flight (the server sees the socket close) → CANCELLED', async () => {
    server.reply({ kind: 'hang' });
    const controller = new AbortController();
    const pending = anthropic().generate(modelRequest({ signal: controller.signal }));
    await waitFor(() => server.count === 1, { what: 'the request to arrive' });
    controller.abort();
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
    await waitFor(() => server.requests[0]?.closedBeforeAnswer, {
      what: 'the server to see the socket close',
    });
  });

  it('is built from anthropic/<model> with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY', async () => {
    server.reply(anthropicMessage({ blocks: [{ text: 'hello' }] }));
    const model = createModelForId('anthropic/claude-sonnet-4-6', {
      ANTHROPIC_API_KEY: KEY,
      ANTHROPIC_BASE_URL: server.url,
    });
    expect(textOf((await model.generate(modelRequest())).content)).toBe('hello');
    expect(server.requests[0]?.body.model).toBe('claude-sonnet-4-6');
    expect(keySent(server.requests[0]?.headers)).toBe(KEY);
  });
});
