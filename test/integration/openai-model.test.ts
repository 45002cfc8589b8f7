/**
 * OpenAIModel through the official `openai` SDK against a local server speaking OpenAI's Chat Completions wire
 * format (test/support/wire/openai-wire.ts): the provider conformance suite, then what is OpenAI's own (Ollama's
 * index-less tool-call deltas, finish reasons, setting names, json_schema output, retry-after-ms). The server
 * records each request, so the tests assert what the SDK sent as well as what the adapter made of the answers.
 * Also: Azure OpenAI's deployment URL and `api-key` header, and an Ollama-style base URL built by
 * createModelForId.
 */
import { describe, expect, it } from 'vitest';
import { createModelForId, OpenAIModel, type OpenAIModelOptions } from '../../src/models/index.js';
import {
  chatCompletion,
  chatCompletionStream,
  openaiError,
  startOpenAIWire,
} from '../support/wire/openai-wire.js';
import { failure, modelRequest, textOf, WEATHER_TOOL } from '../fixtures/model-calls.js';
import {
  describeProviderConformance,
  useWireServer,
  type ConformanceAdapter,
} from '../support/scenarios/provider-conformance.js';

const KEY = 'sk-test-5f3c9a1e7b2d4c6a8e0f';

/** An OpenAIModel against the scripted server at `url`, backing off 1–50 ms unless `options` say otherwise. */
function openaiAt(url: string, options: Partial<OpenAIModelOptions> = {}): OpenAIModel {
  return new OpenAIModel({
    model: 'gpt-test',
    apiKey: KEY,
    baseURL: `${url}/v1`,
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

/** OpenAI's error type and code for a status, as its API sends them. */
function errorKind(status: number): { type: string; code?: string } {
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status >= 500) return { type: 'server_error' };
  return { type: 'invalid_request_error', code: 'invalid_value' };
}

const conformance: ConformanceAdapter = {
  provider: 'OpenAI',
  modelId: 'gpt-test',
  key: KEY,
  startWire: startOpenAIWire,
  model: (url, retry) => openaiAt(url, retry),
  keySent: (request) => request.headers.authorization?.replace(/^Bearer /, ''),
  callPath: '/v1/chat/completions',
  reply: {
    answer: ({ text, calls }) =>
      chatCompletion({ ...(text === undefined ? {} : { text }), toolCalls: calls }),
    stream: ({ text, calls }) =>
      chatCompletionStream({ text, toolCalls: calls, usage: { prompt: 40, completion: 12, cached: 32 } }),
    cutStream: (text, call) =>
      chatCompletionStream({ text: [text], toolCalls: [{ ...call, argChunks: ['{"a'] }], cut: true }),
    error: (status, message, headers) =>
      openaiError(status, message, { ...errorKind(status), ...(headers ? { headers } : {}) }),
  },
  streamUsage: { promptTokens: 40, outputTokens: 12, totalTokens: 52, cachedTokens: 32 },
  expectSent: {
    toolRound(first, second) {
      expect(first.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(first.body).toMatchObject({
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
      expect(first.body.stream).toBeFalsy();
      expect(second.body.messages).toEqual([
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
    },
    twoResults(sent) {
      // Each result is a tool message of its own, whichever way ADK stored them.
      const messages = sent.body.messages as Record<string, unknown>[];
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
      expect(messages[1]).toMatchObject({
        content: 'Checking both.',
        tool_calls: [{ id: 'call_1' }, { id: 'call_2' }],
      });
      expect(messages.slice(2)).toEqual([
        { role: 'tool', tool_call_id: 'call_1', content: '{"w":"sunny"}' },
        { role: 'tool', tool_call_id: 'call_2', content: '{"w":"snowy"}' },
        { role: 'user', content: 'Be brief.' },
      ]);
    },
    stream(sent, callPartials) {
      expect(sent.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
      // The calls are whole only at the finish reason: one partial carries them all.
      expect(callPartials).toHaveLength(1);
    },
  },
};

describeProviderConformance(conformance);

const server = useWireServer(startOpenAIWire);

const openai = (options: Partial<OpenAIModelOptions> = {}): OpenAIModel => openaiAt(server.url, options);

describe('OpenAIModel over a local Chat Completions server', () => {
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
