/**
 * OpenAIModel through the official `openai` SDK against a local server speaking OpenAI's Chat Completions wire
 * format (test/support/openai-wire.ts). The server records each request, so the tests assert what the SDK sent
 * as well as what the adapter made of the answers. Also: Azure OpenAI's deployment URL and `api-key` header,
 * and an Ollama-style base URL built by createModelForId.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Content } from '../../src/core/content.js';
import { createModelForId, OpenAIModel, type OpenAIModelOptions } from '../../src/models/index.js';
import {
  chatCompletion,
  chatCompletionStream,
  openaiError,
  startOpenAIWire,
  type ScriptedWireServer,
} from '../support/openai-wire.js';
import { waitFor } from '../support/wait-for.js';
import { failure, modelRequest, NOW_TOOL, textOf, WEATHER_TOOL } from '../support/model-calls.js';

const KEY = 'sk-test-5f3c9a1e7b2d4c6a8e0f';

let server: ScriptedWireServer;

beforeAll(async () => {
  server = await startOpenAIWire();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.reset();
});

function openai(options: Partial<OpenAIModelOptions> = {}): OpenAIModel {
  return new OpenAIModel({
    model: 'gpt-test',
    apiKey: KEY,
    baseURL: `${server.url}/v1`,
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

describe('OpenAIModel over a local Chat Completions server', () => {
  it('runs a two-turn tool call: tools as JSON Schema out, the call id kept, the tool result sent back by id', async () => {
    const model = openai();
    server.reply(
      chatCompletion({ toolCalls: [{ id: 'call_abc', name: 'get_weather', args: { city: 'Paris' } }] }),
    );
    const ask: Content = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };
    const first = await model.generate(
      modelRequest({ systemInstruction: 'You are terse.', contents: [ask], tools: [WEATHER_TOOL, NOW_TOOL] }),
    );
    expect(first.content).toEqual({
      role: 'model',
      parts: [{ functionCall: { id: 'call_abc', name: 'get_weather', args: { city: 'Paris' } } }],
    });
    expect(first.finishReason).toBe('STOP');
    const sent = server.requests[0];
    expect(sent?.method).toBe('POST');
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent?.body).toMatchObject({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather of a city',
            parameters: WEATHER_TOOL.parameters,
          },
        },
        {
          type: 'function',
          function: {
            name: 'now',
            description: 'The current time',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
    });
    expect(sent?.body.stream).toBeFalsy();

    server.reply(chatCompletion({ text: 'Sunny in Paris.' }));
    const result = {
      role: 'user' as const,
      parts: [{ functionResponse: { id: 'call_abc', name: 'get_weather', response: { forecast: 'sunny' } } }],
    };
    const second = await model.generate(
      modelRequest({ tools: [WEATHER_TOOL], contents: [ask, first.content, result] }),
    );
    expect(textOf(second.content)).toBe('Sunny in Paris.');
    expect(server.requests[1]?.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_abc',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '{"forecast":"sunny"}' },
    ]);
  });

  it('returns two calls of one turn with their ids and sends both results back as tool messages, in order', async () => {
    server.reply(
      chatCompletion({
        text: 'Checking both.',
        toolCalls: [
          { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } },
          { id: 'call_2', name: 'get_weather', args: { city: 'Oslo' } },
        ],
      }),
    );
    const model = openai();
    const first = await model.generate(modelRequest({ tools: [WEATHER_TOOL] }));
    expect(first.content.parts).toEqual([
      { text: 'Checking both.' },
      { functionCall: { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'call_2', name: 'get_weather', args: { city: 'Oslo' } } },
    ]);

    server.reply(chatCompletion({ text: 'Paris sunny, Oslo snowy.' }));
    await model.generate(
      modelRequest({
        tools: [WEATHER_TOOL],
        contents: [
          { role: 'user', parts: [{ text: 'Paris and Oslo?' }] },
          first.content,
          // ADK may store the two results as one content or as two: both become two tool messages.
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'call_1', name: 'get_weather', response: { w: 'sunny' } } }],
          },
          {
            role: 'user',
            parts: [{ functionResponse: { id: 'call_2', name: 'get_weather', response: { w: 'snowy' } } }],
          },
        ],
      }),
    );
    const messages = server.requests[1]?.body.messages as Record<string, unknown>[];
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(messages[1]).toMatchObject({
      content: 'Checking both.',
      tool_calls: [{ id: 'call_1' }, { id: 'call_2' }],
    });
    expect(messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: '{"w":"sunny"}' },
      { role: 'tool', tool_call_id: 'call_2', content: '{"w":"snowy"}' },
    ]);
  });

  it('streams text deltas as partials in order and surfaces a tool call only once its split arguments are whole', async () => {
    server.reply(
      chatCompletionStream({
        text: ['Let me ', 'check ', 'that.'],
        toolCalls: [
          { id: 'call_s1', name: 'get_weather', argChunks: ['{"ci', 'ty": "Pa', 'ris"}'] },
          { id: 'call_s2', name: 'now', argChunks: [] },
        ],
        usage: { prompt: 40, completion: 12, cached: 32 },
      }),
    );
    const partials: Content[] = [];
    const res = await openai().generate(modelRequest({ tools: [WEATHER_TOOL, NOW_TOOL] }), {
      onPartial: (p) => partials.push(p),
    });
    expect(server.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const texts = partials.filter((p) => p.parts.some((part) => part.text !== undefined));
    expect(texts.map(textOf)).toEqual(['Let me ', 'check ', 'that.']);
    const withCalls = partials.filter((p) => p.parts.some((part) => part.functionCall));
    expect(withCalls).toHaveLength(1);
    expect(partials.indexOf(withCalls[0] as Content)).toBe(partials.length - 1);
    expect(res.content.parts).toEqual([
      { text: 'Let me check that.' },
      { functionCall: { id: 'call_s1', name: 'get_weather', args: { city: 'Paris' } } },
      { functionCall: { id: 'call_s2', name: 'now', args: {} } },
    ]);
    expect(withCalls[0]?.parts).toEqual(res.content.parts.slice(1));
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual({ promptTokens: 40, outputTokens: 12, totalTokens: 52, cachedTokens: 32 });
  });

  it('assembles streamed tool calls whose deltas carry no index (older Ollama)', async () => {
    server.reply(
      chatCompletionStream({
        omitIndex: true,
        toolCalls: [
          { id: 'call_o1', name: 'get_weather', argChunks: ['{"city":', '"Rome"}'] },
          { id: 'call_o2', name: 'get_weather', argChunks: ['{"city":"Lima"}'] },
        ],
      }),
    );
    const res = await openai().generate(modelRequest({ tools: [WEATHER_TOOL] }), {
      onPartial: () => undefined,
    });
    expect(res.content.parts).toEqual([
      { functionCall: { id: 'call_o1', name: 'get_weather', args: { city: 'Rome' } } },
      { functionCall: { id: 'call_o2', name: 'get_weather', args: { city: 'Lima' } } },
    ]);
  });

  it('reports usage with cached tokens, and maps the finish reasons to Gemini’s', async () => {
    server.reply(
      chatCompletion({
        text: 'cut',
        finishReason: 'length',
        usage: { prompt: 1200, completion: 7, cached: 1024 },
      }),
    );
    const res = await openai().generate(modelRequest());
    expect(res.usage).toEqual({ promptTokens: 1200, outputTokens: 7, totalTokens: 1207, cachedTokens: 1024 });
    expect(res.finishReason).toBe('MAX_TOKENS');
    server.reply(chatCompletion({ refusal: 'I can’t help with that.' }));
    const refused = await openai().generate(modelRequest());
    expect(refused.finishReason).toBe('SAFETY');
    expect(textOf(refused.content)).toBe('I can’t help with that.');
  });

  it('passes generation settings through with their OpenAI names', async () => {
    server.reply(chatCompletion({ text: 'ok' }));
    const generateContentConfig = {
      temperature: 0.2,
      topP: 0.9,
      maxOutputTokens: 256,
      stopSequences: ['END'],
      seed: 7,
      safetySettings: [],
    };
    await openai().generate(modelRequest({ generateContentConfig }));
    const body = server.requests[0]?.body;
    expect(body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 256,
      stop: ['END'],
      seed: 7,
    });
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('safetySettings');
  });

  it('asks for structured output with response_format json_schema, offers no tools then, and returns the JSON text', async () => {
    const schema = {
      type: 'object',
      properties: { title: { type: 'string' } },
      required: ['title'],
      additionalProperties: false,
    };
    server.reply(chatCompletion({ text: '{"title":"Dune"}' }));
    const res = await openai({ strictSchema: true }).generate(
      modelRequest({ responseSchema: schema, tools: [WEATHER_TOOL] }),
    );
    expect(JSON.parse(textOf(res.content))).toEqual({ title: 'Dune' });
    const body = server.requests[0]?.body;
    expect(body?.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema, strict: true },
    });
    expect(body?.tools).toBeUndefined();
  });

  it('retries a 429 after its retry-after seconds, then returns the answer', async () => {
    server.reply(
      openaiError(429, 'Rate limit reached', {
        type: 'requests',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after': '1' },
      }),
      chatCompletion({ text: 'after waiting' }),
    );
    const started = Date.now();
    const res = await openai({ maxBackoffMs: 5000 }).generate(modelRequest());
    expect(textOf(res.content)).toBe('after waiting');
    expect(server.count).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('honours retry-after-ms over retry-after on a 503', async () => {
    server.reply(
      openaiError(503, 'overloaded', {
        type: 'server_error',
        headers: { 'retry-after-ms': '250', 'retry-after': '30' },
      }),
      chatCompletion({ text: 'ok' }),
    );
    const started = Date.now();
    await openai({ maxBackoffMs: 60_000 }).generate(modelRequest());
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(225);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('retries a dropped connection and a stream cut before its finish reason', async () => {
    server.reply({ kind: 'drop' }, chatCompletion({ text: 'reconnected' }));
    expect(textOf((await openai().generate(modelRequest())).content)).toBe('reconnected');
    server.reset();
    server.reply(
      chatCompletionStream({ text: ['half'], cut: true }),
      chatCompletionStream({ text: ['whole'] }),
    );
    const res = await openai().generate(modelRequest(), { onPartial: () => undefined });
    expect(textOf(res.content)).toBe('whole');
    expect(server.count).toBe(2);
  });

  it('gives up after maxAttempts on 500 with a retryable MODEL_ERROR (the SDK does not retry too)', async () => {
    for (let i = 0; i < 5; i++)
      server.reply(openaiError(500, 'The server had an error', { type: 'server_error' }));
    const err = await failure(openai({ maxAttempts: 3 }).generate(modelRequest()));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.details).toEqual({ status: 500, model: 'gpt-test' });
    expect(server.count).toBe(3);
  });

  it('fails a 400 at once with a clear error naming provider, model and the provider’s message, never the key', async () => {
    server.reply(
      openaiError(400, "Invalid value for 'temperature': must be <= 2.", { code: 'invalid_value' }),
    );
    const err = await failure(openai().generate(modelRequest({ generateContentConfig: { temperature: 9 } })));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('OpenAI');
    expect(err.message).toContain("'gpt-test'");
    expect(err.message).toContain('400');
    expect(err.message).toContain("Invalid value for 'temperature'");
    expect(err.details).toMatchObject({ status: 400 });
    expect(JSON.stringify({ message: err.message, details: err.details, json: err.toJSON() })).not.toContain(
      KEY,
    );
    expect(server.count).toBe(1);
  });

  it('redacts the key when the provider’s 401 message echoes it', async () => {
    server.reply(openaiError(401, `Incorrect API key provided: ${KEY}.`, { code: 'invalid_api_key' }));
    const err = await failure(openai().generate(modelRequest()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('401');
    expect(err.message).toContain('[redacted]');
    expect(`${err.message} ${JSON.stringify(err.details)} ${(err.cause as Error).message}`).not.toContain(
      KEY,
    );
    expect(server.count).toBe(1);
  });

  it('cancels: the signal aborts the HTTP request in flight (the server sees the socket close) → CANCELLED', async () => {
    server.reply({ kind: 'hang' });
    const controller = new AbortController();
    const pending = openai().generate(modelRequest({ signal: controller.signal }), {
      onPartial: () => undefined,
    });
    await waitFor(() => server.count === 1, { what: 'the request to arrive' });
    controller.abort();
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
    await waitFor(() => server.requests[0]?.closedBeforeAnswer, {
      what: 'the server to see the socket close',
    });
  });

  it('fails a malformed tool-call argument string with MODEL_ERROR, without retrying', async () => {
    server.reply(
      chatCompletion({ toolCalls: [{ id: 'call_x', name: 'get_weather', args: '{"city": Par' }] }),
    );
    const err = await failure(openai().generate(modelRequest({ tools: [WEATHER_TOOL] })));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.message).toContain('get_weather');
    expect(server.count).toBe(1);
  });

  it('talks to Azure OpenAI: the deployment URL with api-version and the api-key header', async () => {
    server.reply(chatCompletion({ text: 'from azure' }));
    const model = new OpenAIModel({
      model: 'gpt-4o',
      apiKey: KEY,
      azure: { endpoint: `${server.url}/`, apiVersion: '2024-10-21', deployment: 'my-deploy' },
    });
    const res = await model.generate(modelRequest());
    expect(textOf(res.content)).toBe('from azure');
    const sent = server.requests[0];
    expect(sent?.path).toBe('/openai/deployments/my-deploy/chat/completions');
    expect(sent?.query.get('api-version')).toBe('2024-10-21');
    expect(sent?.headers['api-key']).toBe(KEY);
    expect(sent?.headers.authorization).toBeUndefined();
  });

  it('talks to an Ollama-style server built from ollama/<model>: /v1 under OLLAMA_HOST, placeholder key, max_tokens', async () => {
    server.reply(chatCompletion({ text: 'from llama' }));
    const model = createModelForId('ollama/llama3.2', { OLLAMA_HOST: server.url });
    const res = await model.generate(modelRequest({ generateContentConfig: { maxOutputTokens: 64 } }));
    expect(textOf(res.content)).toBe('from llama');
    const sent = server.requests[0];
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer ollama');
    expect(sent?.body).toMatchObject({ model: 'llama3.2', max_tokens: 64 });
    expect(sent?.body).not.toHaveProperty('max_completion_tokens');
  });
});
