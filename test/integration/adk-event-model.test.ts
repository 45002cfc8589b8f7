/**
 * The ADK routes answer ADK's event model exactly, on PostgreSQL through a real API server: for runs with model
 * calls (token usage reported), plain tools, a confirmation, a long-running tool, a transfer and streamed partial
 * events, every event `/run`, `/run_sse` and `GET …/sessions/{id}` answer carries only the keys of adk-python's
 * `Event` and `EventActions` (which forbids any other, so a Python ADK client would refuse the event), with token
 * usage as `usageMetadata` in google-genai's keys. The engine's own fields (the model request digest, `usage`) stay
 * on `/v1`.
 */
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createEngine,
  FunctionTool,
  LlmAgent,
  ScriptedModel,
  type GenerateOptions,
  type LlmAgentOptions,
  type Model,
  type ModelReply,
  type ModelRequest,
  type ModelResponse,
  type ScriptedTurn,
} from '../../src/index.js';
import { keysOutsideAdkModel } from '../support/assert/adk-event-model.js';
import { call, confirmedTool, longRunningTool } from '../fixtures/agents.js';
import { apiClient } from '../support/client/http-client.js';
import { serveEngine } from '../support/services/api-servers.js';
import { createTestDatabase } from '../support/services/services.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
type Json = any;

const USAGE = { promptTokens: 11, outputTokens: 4, totalTokens: 15, cachedTokens: 2 };

/** Whether the streaming model may finish its answer (the test opens it once a partial reached it). */
const stream = { open: false };

/** A model that streams partials until `stream.open`, then answers; each call reports {@link USAGE}. */
class StreamingModel implements Model {
  readonly name = 'streaming';

  async generate(_request: ModelRequest, options?: GenerateOptions): Promise<ModelResponse> {
    for (let chunk = 0; chunk === 0 || !stream.open; chunk++) {
      options?.onPartial?.({ role: 'model', parts: [{ text: `chunk ${chunk} ` }] });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return { content: { role: 'model', parts: [{ text: 'streamed answer' }] }, usage: { ...USAGE } };
  }
}

const api = serveEngine(
  async () => {
    const lookup = new FunctionTool({
      name: 'lookup',
      description: 'looks an order up',
      execute: () => ({ order: 'shipped' }),
    });
    const send = confirmedTool('send_mail', 'sends a mail');
    const startJob = longRunningTool('start_job', 'starts a job', 'started');
    const firstCall = (name: string, answer: string) => (turn: ScriptedTurn) =>
      turn.callIndex === 0 ? call(name, { id: 7 }) : answer;
    const billing = metered('billing', () => 'billing here', { description: 'billing questions' });
    const router = metered(
      'router',
      (turn) => (turn.callIndex === 0 ? call('transfer_to_agent', { agent_name: 'billing' }) : 'router'),
      { subAgents: [billing] },
    );
    return createEngine({
      apps: [
        { name: 'desk', agent: metered('clerk', firstCall('lookup', 'it shipped'), { tools: [lookup] }) },
        { name: 'mail', agent: metered('sender', firstCall('send_mail', 'mail sent'), { tools: [send] }) },
        { name: 'jobs', agent: metered('runner', firstCall('start_job', 'job done'), { tools: [startJob] }) },
        { name: 'routing', agent: router },
        {
          name: 'stream',
          agent: new LlmAgent({ name: 'streamer', model: new StreamingModel(), stream: true }),
        },
      ],
      database: await createTestDatabase(),
      queue: 'local',
      logger: pino({ level: 'silent' }),
    });
  },
  { processMetrics: false },
);

/** An LlmAgent whose scripted model reports {@link USAGE} on every call, as a provider would. */
function metered(
  name: string,
  reply: (turn: ScriptedTurn) => ModelReply,
  options: Partial<LlmAgentOptions> = {},
): LlmAgent {
  return new LlmAgent({ name, model: new ScriptedModel({ respond: reply, usage: USAGE }), ...options });
}

const http = apiClient<Json>({ base: () => api.base });

/** `/run_sse`, read block by block as it arrives; `onEvent` sees each event as it comes. */
async function runSse(body: Json, onEvent: (event: Json) => void = () => undefined): Promise<Json[]> {
  // Read as it streams, so not through the client (which reads an answer whole).
  const response = await fetch(`${api.base}/run_sse`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  const events: Json[] = [];
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      expect(block, 'only data: lines').toMatch(/^data: [^\n]*$/);
      const event = JSON.parse(block.slice('data: '.length));
      events.push(event);
      onEvent(event);
    }
  }
  return events;
}

type Route = '/run' | '/run_sse';

/** One message through `route`: the events it answered. */
async function send(route: Route, body: Json): Promise<Json[]> {
  if (route === '/run_sse') {
    return runSse({ ...body, streaming: true }, (event) => {
      if (event.partial) stream.open = true;
    });
  }
  stream.open = true;
  const response = await http('POST', '/run', body);
  expect(response.status).toBe(200);
  return response.body as Json[];
}

/**
 * A conversation with `app` through `route`: the user's message, then an answer to each call the run pauses on
 * (a confirmation, a long-running tool), until it settles; the events answered and the stored session's.
 */
async function converse(route: Route, app: string): Promise<{ answered: Json[]; stored: Json[] }> {
  const user = `u-${route.slice(1)}`;
  const { body: session } = await http('POST', `/apps/${app}/users/${user}/sessions`, {});
  const ids = { appName: app, userId: user, sessionId: session.id };
  stream.open = false;
  const answered = await send(route, { ...ids, newMessage: { role: 'user', parts: [{ text: 'hello' }] } });
  let latest = answered;
  for (let round = 0; round < 3; round++) {
    // The call the run waits on: a function call listed in its own event's longRunningToolIds.
    const pending = latest
      .flatMap((e) => (e.content?.parts ?? []).map((p: Json) => ({ e, call: p.functionCall })))
      .findLast(({ e, call: c }) => c && e.longRunningToolIds?.includes(c.id));
    if (!pending) break;
    const { id: callId, name } = pending.call;
    const response = name === 'adk_request_confirmation' ? { confirmed: true } : { status: 'done' };
    const parts = [{ functionResponse: { id: callId, name, response } }];
    latest = await send(route, { ...ids, newMessage: { role: 'user', parts } });
    answered.push(...latest);
  }
  const stored = await http('GET', `/apps/${app}/users/${user}/sessions/${session.id}`);
  expect(stored.status).toBe(200);
  return { answered, stored: stored.body.events };
}

const APPS = ['desk', 'mail', 'jobs', 'routing', 'stream'];

describe.each(['/run', '/run_sse'] as const)('events of %s and of the session read after it', (route) => {
  const seen: Json[] = [];

  beforeAll(async () => {
    for (const app of APPS) {
      const { answered, stored } = await converse(route, app);
      expect(answered.length, `${app}: events answered`).toBeGreaterThan(0);
      seen.push(...answered.map((e) => ({ app, where: route, e })));
      seen.push(...stored.map((e) => ({ app, where: 'GET session', e })));
    }
  });

  it('carries no key outside ADK Event, EventActions, ToolConfirmation, NodeInfo and usage metadata', () => {
    const outside = seen.flatMap(({ app, where, e }) =>
      keysOutsideAdkModel(e).map((key) => `${app} ${where} ${String(e.author)}: ${key}`),
    );
    expect(outside).toEqual([]);
  });

  it('covered model calls with usage, tools, a confirmation, a long-running call, a transfer', () => {
    const events = seen.map(({ e }) => e);
    const parts = events.flatMap((e) => e.content?.parts ?? []);
    expect(parts.some((p: Json) => p.functionResponse?.name === 'lookup')).toBe(true);
    expect(events.some((e) => Object.keys(e.actions.requestedToolConfirmations ?? {}).length > 0)).toBe(true);
    expect(parts.some((p: Json) => p.functionResponse?.name === 'start_job')).toBe(true);
    expect(events.some((e) => e.actions.transferToAgent === 'billing')).toBe(true);
    expect(events.some((e) => e.author === 'billing' && e.content?.parts?.[0]?.text === 'billing here')).toBe(
      true,
    );
    expect(events.filter((e) => e.usageMetadata).map((e) => e.usageMetadata)).toContainEqual({
      promptTokenCount: 11,
      candidatesTokenCount: 4,
      totalTokenCount: 15,
      cachedContentTokenCount: 2,
    });
    if (route === '/run_sse') expect(events.some((e) => e.partial === true)).toBe(true);
  });
});

describe('/v1', () => {
  it("keeps the engine's own fields on a model event", async () => {
    const { answered } = await converse('/run', 'stream');
    const invocationId = answered[0].invocationId;
    const { events } = (await http('GET', `/v1/invocations/${invocationId}/events`)).body;
    const model = events.find((e: Json) => e.author === 'streamer');
    expect(model.actions.modelRequest).toEqual({
      instruction: expect.any(String),
      tools: expect.any(String),
    });
    expect(model.actions.usage).toEqual(USAGE);
    expect(model).toHaveProperty('seq');
  });
});
