/**
 * The Gemini adapter against a local server speaking Gemini's REST wire format, reached by the real
 * @google/genai client through `httpOptions.baseUrl`. The server records every request it receives.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentloomError } from '../../src/core/errors.js';
import type { Content } from '../../src/core/content.js';
import { Gemini, type GeminiOptions } from '../../src/models/index.js';
import { failure, modelRequest } from '../support/model-calls.js';

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

/** What the server answers to the next request. */
type Reply =
  | { kind: 'json'; status?: number; headers?: Record<string, string>; body: unknown }
  | { kind: 'sse'; chunks: unknown[] }
  | { kind: 'drop' };

const seen: Seen[] = [];
const replies: Reply[] = [];
let server: Server;
let baseUrl: string;

function answer(res: ServerResponse, reply: Reply | undefined): void {
  if (reply === undefined) {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { code: 500, message: 'test server: no reply queued', status: 'INTERNAL' } }),
    );
  } else if (reply.kind === 'drop') {
    res.socket?.destroy();
  } else if (reply.kind === 'sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const chunk of reply.chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    res.end();
  } else {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(reply.body));
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const raw = Buffer.concat(chunks).toString('utf8');
      seen.push({
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
      });
      answer(res, replies.shift());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  replies.length = 0;
});

function gemini(options: Partial<GeminiOptions> = {}): Gemini {
  return new Gemini({
    model: 'gemini-test',
    apiKey: 'test-key',
    httpOptions: { baseUrl },
    initialBackoffMs: 1,
    maxBackoffMs: 50,
    ...options,
  });
}

function modelParts(parts: unknown[], extra: Record<string, unknown> = {}): Reply {
  return {
    kind: 'json',
    body: {
      candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, totalTokenCount: 10 },
      ...extra,
    },
  };
}

function textOf(content: Content): string {
  return content.parts.map((p) => p.text ?? '').join('');
}

describe('Gemini over a local Gemini REST server', () => {
  it('returns plain text with finish reason and usage, sending contents and the API key', async () => {
    replies.push(modelParts([{ text: 'Hello there' }]));
    const res = await gemini().generate(modelRequest());
    expect(res.content).toEqual({ role: 'model', parts: [{ text: 'Hello there' }] });
    expect(res.finishReason).toBe('STOP');
    expect(res.usage).toEqual({ promptTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.method).toBe('POST');
    expect(seen[0]?.path).toBe('/v1beta/models/gemini-test:generateContent');
    expect(seen[0]?.headers['x-goog-api-key']).toBe('test-key');
    expect(seen[0]?.body).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] });
  });

  it('uses the request model over the default one', async () => {
    replies.push(modelParts([{ text: 'ok' }]));
    await gemini().generate(modelRequest({ model: 'gemini-other' }));
    expect(seen[0]?.path).toBe('/v1beta/models/gemini-other:generateContent');
  });

  it('round-trips a function call: declarations out, call with an id back, function response out', async () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const tools = [{ name: 'get_weather', description: 'Weather of a city', parameters }];
    replies.push(modelParts([{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }]));
    const model = gemini();
    const first = await model.generate(modelRequest({ tools }));
    const call = first.content.parts[0]?.functionCall;
    expect(call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
    expect(call?.id).toMatch(/^call_/);
    expect(seen[0]?.body).toMatchObject({
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather of a city' }] }],
    });
    const declared = (seen[0]?.body.tools as { functionDeclarations: Record<string, unknown>[] }[])[0]
      ?.functionDeclarations[0];
    expect(declared?.parametersJsonSchema ?? declared?.parameters).toEqual(parameters);

    replies.push(modelParts([{ text: 'Sunny in Paris.' }]));
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
    expect(seen).toHaveLength(2);
    expect(seen[1]?.body).toMatchObject({
      contents: [
        { role: 'user' },
        { role: 'model', parts: [{ functionCall: { id: call?.id, name: 'get_weather' } }] },
        { role: 'user', parts: [{ functionResponse }] },
      ],
    });
  });

  it('sends the system instruction and passes generateContentConfig through', async () => {
    replies.push(modelParts([{ text: 'ok' }]));
    await gemini().generate(
      modelRequest({ systemInstruction: 'You are terse.', generateContentConfig: { temperature: 0.25 } }),
    );
    expect(seen[0]?.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      generationConfig: { temperature: 0.25 },
    });
  });

  it('asks for JSON with the response schema, offers no tools then, and returns the JSON text', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
    replies.push(modelParts([{ text: '{"title":"Dune"}' }]));
    const res = await gemini().generate(
      modelRequest({
        responseSchema: schema,
        tools: [{ name: 'search', description: 'Search' }],
      }),
    );
    expect(JSON.parse(textOf(res.content))).toEqual({ title: 'Dune' });
    const body = seen[0]?.body;
    expect(body).toMatchObject({ generationConfig: { responseMimeType: 'application/json' } });
    const config = body?.generationConfig as Record<string, unknown>;
    expect(config.responseJsonSchema ?? config.responseSchema).toEqual(schema);
    expect(body?.tools).toBeUndefined();
  });

  it('retries a 429 after its Retry-After header and returns the result', async () => {
    replies.push(
      { kind: 'json', status: 429, headers: { 'retry-after': '0' }, body: rateLimited() },
      modelParts([{ text: 'after retry' }]),
    );
    const res = await gemini().generate(modelRequest());
    expect(textOf(res.content)).toBe('after retry');
    expect(seen).toHaveLength(2);
  });

  it('waits the Retry-After seconds of a 503 rather than its own (1 ms) backoff', async () => {
    replies.push(
      { kind: 'json', status: 503, headers: { 'retry-after': '1' }, body: { error: { code: 503 } } },
      modelParts([{ text: 'after waiting' }]),
    );
    const started = Date.now();
    const res = await gemini({ maxBackoffMs: 5000 }).generate(modelRequest());
    expect(textOf(res.content)).toBe('after waiting');
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('waits the RetryInfo retryDelay of a 429 even when it exceeds the jittered backoff', async () => {
    replies.push(
      { kind: 'json', status: 429, body: rateLimited('0.2s') },
      modelParts([{ text: 'after retry info' }]),
    );
    const started = Date.now();
    const res = await gemini({ maxBackoffMs: 1000 }).generate(modelRequest());
    expect(textOf(res.content)).toBe('after retry info');
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('retries a dropped connection', async () => {
    replies.push({ kind: 'drop' }, modelParts([{ text: 'reconnected' }]));
    const res = await gemini().generate(modelRequest());
    expect(textOf(res.content)).toBe('reconnected');
    expect(seen).toHaveLength(2);
  });

  it('gives up after maxAttempts on 503 with a retryable MODEL_ERROR (and the SDK does not retry too)', async () => {
    const unavailable = { error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } };
    for (let i = 0; i < 5; i++) replies.push({ kind: 'json', status: 503, body: unavailable });
    const err = await failure(gemini({ maxAttempts: 3 }).generate(modelRequest()));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.details).toEqual({ status: 503, model: 'gemini-test' });
    expect(err.message).toContain('503');
    expect(err.message).toContain('overloaded');
    expect(seen).toHaveLength(3);
  });

  it('does not retry a 400 and throws a non-retryable MODEL_ERROR', async () => {
    const invalid = { error: { code: 400, message: 'Invalid JSON payload', status: 'INVALID_ARGUMENT' } };
    replies.push({ kind: 'json', status: 400, body: invalid }, modelParts([{ text: 'never' }]));
    const err = await failure(gemini().generate(modelRequest()));
    expect(err.code).toBe('MODEL_ERROR');
    expect(err.retryable).toBe(false);
    expect(err.details).toMatchObject({ status: 400 });
    expect(err.message).toContain('400');
    expect(err.message).toContain('Invalid JSON payload');
    expect(err.cause).toBeInstanceOf(Error);
    expect(seen).toHaveLength(1);
  });

  it('streams partials to onPartial and aggregates them into one content', async () => {
    const chunk = (parts: unknown[], finishReason?: string): unknown => ({
      candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}) }],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 4, totalTokenCount: 9 },
    });
    replies.push({
      kind: 'sse',
      chunks: [
        chunk([{ text: 'Once ' }]),
        chunk([{ text: 'upon ' }]),
        chunk([{ text: 'a time.' }, { functionCall: { name: 'remember', args: { what: 'story' } } }], 'STOP'),
      ],
    });
    const partials: Content[] = [];
    const res = await gemini().generate(modelRequest(), { onPartial: (p) => partials.push(p) });
    expect(seen[0]?.path).toBe('/v1beta/models/gemini-test:streamGenerateContent');
    expect(seen[0]?.query.get('alt')).toBe('sse');
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

  it('rejects with CANCELLED without calling the server when the signal is already aborted', async () => {
    replies.push(modelParts([{ text: 'never' }]));
    const controller = new AbortController();
    controller.abort();
    const err = await failure(gemini().generate(modelRequest({ signal: controller.signal })));
    expect(err.code).toBe('CANCELLED');
    expect(seen).toHaveLength(0);
  });

  it('rejects with CANCELLED when aborted while backing off', async () => {
    replies.push({ kind: 'json', status: 429, body: rateLimited('30s') }, modelParts([{ text: 'never' }]));
    const controller = new AbortController();
    const pending = gemini({ maxBackoffMs: 60_000 }).generate(modelRequest({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
    expect(seen).toHaveLength(1);
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

function rateLimited(retryDelay?: string): unknown {
  return {
    error: {
      code: 429,
      message: 'Resource has been exhausted',
      status: 'RESOURCE_EXHAUSTED',
      details:
        retryDelay === undefined ? [] : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }],
    },
  };
}
