/**
 * Every app an A2A server (issue 31), on PostgreSQL through a real API server, driven by `@a2a-js/sdk`'s own 1.x
 * client: the card (kagent's path too), blocking and non-blocking sends, a stream in order with the output as the
 * final artifact, get with historyLength, cancel, resubscribe after a dropped stream, a confirmation as
 * `input-required` answered with a DataPart on the same task, a conversation continued by contextId; v0.3-shaped
 * JSON-RPC (`message/send` …) on the same endpoint; the spec's error codes for bad requests, which store nothing;
 * API keys: none → 401, another app's key → refused.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListTasksRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import { createApiServer, type ApiApp } from '../../src/api/index.js';
import {
  createEngine,
  FunctionTool,
  SequentialAgent,
  type Engine,
  type ScriptedTurn,
} from '../../src/index.js';
import { listInvocations } from '../../src/store/repos/invocations.js';
import { asTask, clientFor, collect, send, sseResults, textsOf } from '../support/a2a-client.js';
import { call, gate, GatedLeaf, scripted } from '../support/agents.js';
import { createTestDatabase } from '../support/services.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON answers, read only by the assertions
type Json = any;

const KEY = 'a2a-server-key-0123456789';
const OTHER = 'a2a-server-other-0123456789';
let engine: Engine;
let apiEngine: Engine;
let database: string;
let other: ApiApp;
let otherBase: string;
let open: ApiApp;
let keyed: ApiApp;
let base: string;
let keyedBase: string;
let sends = 0;
const gates = [gate(), gate(), gate(), gate()];

beforeAll(async () => {
  const send = new FunctionTool({
    name: 'send_mail',
    description: 'sends a mail',
    requireConfirmation: true,
    execute: () => {
      sends++;
      return { sent: true };
    },
  });
  const mail = scripted(
    'sender',
    (turn: ScriptedTurn) => (turn.callIndex === 0 ? call('send_mail', { to: 'bob' }) : 'mail handled'),
    { tools: [send], description: 'sends mails after a confirmation' },
  );
  const echo = scripted('echoer', (turn: ScriptedTurn) => `echo #${turn.contents.length}`, {
    description: 'echoes',
  });
  database = await createTestDatabase();
  engine = await createEngine({
    apps: [
      { name: 'echo', agent: echo },
      { name: 'mail', agent: mail },
      {
        name: 'broken',
        agent: scripted('breaker', () => {
          throw new Error('the model is down');
        }),
      },
      { name: 'held', agent: new GatedLeaf('holder', gates[2]!.promise) },
      { name: 'relay', agent: new GatedLeaf('relayer', gates[3]!.promise) },
      { name: 'team_echo', agent: scripted('team_echoer', 'team echo'), namespace: 'team' },
      {
        name: 'slow',
        agent: new SequentialAgent({
          name: 'slow_pipeline',
          description: 'waits',
          subAgents: [new GatedLeaf('first', gates[0]!.promise), new GatedLeaf('second', gates[1]!.promise)],
        }),
      },
    ],
    database,
    queue: 'local',
    logger: pino({ level: 'silent' }),
  });
  // Another API process on the same database: an engine that runs no steps, as `agentloom api`'s.
  apiEngine = await createEngine({
    apps: [{ name: 'relay', agent: new GatedLeaf('relayer', gates[3]!.promise) }],
    database,
    queue: 'local',
    worker: false,
    logger: pino({ level: 'silent' }),
  });
  other = await createApiServer({ engine: apiEngine, processMetrics: false });
  otherBase = await other.listen({ port: 0, host: '127.0.0.1' });
  // Heartbeats every 5 ms: every stream below carries comments between its events, which clients skip.
  open = await createApiServer({ engine, processMetrics: false, heartbeatMs: 5 });
  base = await open.listen({ port: 0, host: '127.0.0.1' });
  keyed = await createApiServer({
    engine,
    processMetrics: false,
    apiKeys: `echoes:${KEY}:echo others:${OTHER}:mail`,
  });
  keyedBase = await keyed.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  gates.forEach((g) => g.open());
  await open?.close();
  await keyed?.close();
  await other?.close();
  await apiEngine?.close();
  await engine?.close();
});

async function rpc(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; text: string }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

describe('the agent card', () => {
  it('describes the app: name, description, skills, streaming, the JSON-RPC endpoint (v1.0 and v0.3 shapes)', async () => {
    const client = await clientFor(`${base}/a2a/mail`);
    const card = await client.getAgentCard();
    expect(card.name).toBe('mail');
    expect(card.description).toBe('sends mails after a confirmation');
    expect(card.skills.map((s) => s.id)).toEqual(['sender']);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces[0]?.url).toBe(`${base}/a2a/mail`);
    expect(client.protocolVersion).toBe('1.0');
    expect(card.securitySchemes ?? {}).toEqual({});
    const legacy = (await (
      await fetch(`${base}/api/a2a/default/slow/.well-known/agent-card.json`)
    ).json()) as Json;
    expect(legacy).toMatchObject({
      name: 'slow',
      url: `${base}/api/a2a/default/slow`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true },
    });
    expect(legacy.skills.map((s: Json) => s.id)).toEqual(['slow_pipeline', 'first', 'second']);
    // the path clients before A2A 0.3 read: the same card
    const old = (await (await fetch(`${base}/api/a2a/default/slow/.well-known/agent.json`)).json()) as Json;
    expect(old).toEqual(legacy);
    expect((await fetch(`${base}/api/a2a/kagent/slow/.well-known/agent-card.json`)).status).toBe(404);
    expect((await fetch(`${base}/a2a/nope/.well-known/agent-card.json`)).status).toBe(404);
  });

  it("is at its kagent namespace's path for an app from kagent manifests, and only there", async () => {
    const card = (await (
      await fetch(`${base}/api/a2a/team/team_echo/.well-known/agent-card.json`)
    ).json()) as Json;
    expect(card.url).toBe(`${base}/api/a2a/team/team_echo`);
    expect((await fetch(`${base}/api/a2a/default/team_echo/.well-known/agent-card.json`)).status).toBe(404);
    const client = await clientFor(`${base}/api/a2a/team/team_echo`);
    expect(textsOf(asTask(await client.sendMessage(send('hi'))))).toEqual(['team echo']);
    const wrong = await rpc('/api/a2a/default/team_echo', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/get',
      params: { id: 'x' },
    });
    expect(wrong.status).toBe(404);
  });

  it('declares the bearer scheme when API keys are on', async () => {
    const card = (await (
      await fetch(`${keyedBase}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as Json;
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('bearer');
    const legacy = (await (await fetch(`${keyedBase}/a2a/echo/.well-known/agent-card.json`)).json()) as Json;
    expect(legacy.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
  });
});

describe('messages and tasks', () => {
  it('sends blocking: the completed task with the output artifact; taskId is the invocation, contextId the session', async () => {
    const client = await clientFor(`${base}/a2a/echo`);
    const task = asTask(await client.sendMessage(send('hello')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(task)).toEqual(['echo #1']);
    const view = await engine.get(task.id);
    expect(view).toMatchObject({ app: 'echo', sessionId: task.contextId, status: 'completed' });
    // the same contextId continues the conversation: the model sees both turns
    const next = asTask(await client.sendMessage(send('again', { contextId: task.contextId })));
    expect(next.contextId).toBe(task.contextId);
    expect(next.id).not.toBe(task.id);
    expect(textsOf(next)).toEqual(['echo #3']);
    const read = await client.getTask({ tenant: '', id: next.id, historyLength: 2 });
    expect(read.history.map((m) => m.parts[0]?.content)).toEqual([
      { $case: 'text', value: 'again' },
      { $case: 'text', value: 'echo #3' },
    ]);
    expect((await client.getTask({ tenant: '', id: next.id, historyLength: 0 })).history).toEqual([]);
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ contextId: task.contextId }));
    expect(listed.tasks.map((t) => t.id)).toEqual([next.id, task.id]);
  });

  it('sends non-blocking: a submitted or working task, completed later', async () => {
    const client = await clientFor(`${base}/a2a/echo`);
    const task = asTask(await client.sendMessage(send('later', { returnImmediately: true })));
    expect([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]).toContain(task.status?.state);
    await engine.wait(task.id);
    const done = await client.getTask({ tenant: '', id: task.id });
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(done)).toEqual(['echo #1']);
  });

  it('streams the task: the task first, status updates, the output artifact, then completed', async () => {
    const client = await clientFor(`${base}/a2a/echo`);
    const events = await collect(client.sendMessageStream(send('stream me')));
    const kinds = events.map((e) => e.payload?.$case);
    expect(kinds[0]).toBe('task');
    expect(kinds.slice(-2)).toEqual(['artifactUpdate', 'statusUpdate']);
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.at(-2)?.payload;
    expect(artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content).toEqual({
      $case: 'text',
      value: 'echo #1',
    });
  });

  it('pauses on a confirmation as input-required, answered by a DataPart on the same task', async () => {
    const client = await clientFor(`${base}/api/a2a/default/mail`);
    const paused = asTask(await client.sendMessage(send('mail bob')));
    expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const asked = paused.status?.message?.parts[0]?.content;
    expect(asked?.$case).toBe('data');
    const pending = (asked as { value: Json }).value;
    expect(pending).toMatchObject({ kind: 'confirmation', tool: 'send_mail', args: { to: 'bob' } });
    expect(sends).toBe(0);
    // a message answering the call and a call that does not exist is refused (-32602) and answers nothing;
    // so are a malformed answer and a text to a task that waits for an answer
    const mixed = await rpc(
      '/a2a/mail',
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            messageId: 'mixed',
            taskId: paused.id,
            role: 'ROLE_USER',
            parts: [
              { data: { callId: pending.callId, confirmed: true } },
              { data: { callId: 'nope', confirmed: true } },
            ],
          },
        },
      },
      { 'A2A-Version': '1.0' },
    );
    expect(mixed.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('nope') });
    await expect(
      client.sendMessage(send('', { taskId: paused.id, data: { callId: pending.callId, yes: true } })),
    ).rejects.toThrow(/DataPart/);
    await expect(client.sendMessage(send('yes please', { taskId: paused.id }))).rejects.toThrow(
      /waits for input/,
    );
    expect(await engine.get(paused.id)).toMatchObject({
      status: 'paused',
      pending: [{ callId: pending.callId }],
    });
    expect(sends).toBe(0);
    const events = await collect(
      client.sendMessageStream(
        send('', {
          taskId: paused.id,
          contextId: paused.contextId,
          data: { callId: pending.callId, confirmed: true },
        }),
      ),
    );
    const first = events[0]?.payload;
    expect(first?.$case === 'task' && first.value.id).toBe(paused.id);
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.taskId).toBe(paused.id);
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(sends).toBe(1);
    expect(textsOf(await client.getTask({ tenant: '', id: paused.id }))).toEqual(['mail handled']);
    // an ended task takes no more messages (-32004)
    await expect(client.sendMessage(send('more', { taskId: paused.id }))).rejects.toThrow();
  });

  it('fails with the error in the status message, sent or streamed', async () => {
    const client = await clientFor(`${base}/a2a/broken`);
    const failed = asTask(await client.sendMessage(send('break')));
    expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const said = failed.status?.message?.parts[0]?.content;
    expect(said?.$case === 'text' && said.value).toMatch(/the model is down/);
    expect(failed.artifacts).toEqual([]);
    const events = await collect(client.sendMessageStream(send('break again')));
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(events.some((e) => e.payload?.$case === 'artifactUpdate')).toBe(false);
  });

  it('cancels a running task; an ended one is not cancelable', async () => {
    const client = await clientFor(`${base}/a2a/slow`);
    const task = asTask(await client.sendMessage(send('wait', { returnImmediately: true })));
    const cancelled = await client.cancelTask({ tenant: '', id: task.id, metadata: {} });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await engine.get(task.id)).status).toBe('cancelled');
    const echo = await clientFor(`${base}/a2a/echo`);
    const done = asTask(await echo.sendMessage(send('x')));
    await expect(echo.cancelTask({ tenant: '', id: done.id, metadata: {} })).rejects.toThrow(
      /cancelable|ended/i,
    );
  });

  it('resubscribes after a dropped stream and sees the rest of the same task', async () => {
    const client = await clientFor(`${base}/a2a/slow`);
    const controller = new AbortController();
    const stream = client.sendMessageStream(send('go'), { signal: controller.signal });
    const head = await collect(stream, () => true);
    const first = head[0]?.payload;
    expect(first?.$case).toBe('task');
    const taskId = first?.$case === 'task' ? first.value.id : '';
    controller.abort();
    gates[0]!.open();
    const resumed = client.resubscribeTask({ tenant: '', id: taskId });
    const events: StreamResponse[] = [];
    for await (const event of resumed) {
      events.push(event);
      if (events.length === 1) gates[1]!.open();
    }
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(last?.$case === 'statusUpdate' && last.value.taskId).toBe(taskId);
    const artifact = events.at(-2)?.payload;
    expect(artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content).toEqual({
      $case: 'text',
      value: 'second',
    });
  });
});

describe('v0.3 clients', () => {
  it('message/send, tasks/get and message/stream in v0.3 shapes on the same endpoint', async () => {
    const sent = await rpc('/api/a2a/default/echo', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'v03-1',
          role: 'user',
          parts: [{ kind: 'text', text: 'old client' }],
        },
        configuration: { blocking: true },
      },
    });
    expect(sent.status).toBe(200);
    expect(sent.json.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect(sent.json.result.artifacts[0].parts[0]).toMatchObject({ kind: 'text', text: 'echo #1' });
    const got = await rpc('/a2a/echo', {
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/get',
      params: { id: sent.json.result.id, historyLength: 1 },
    });
    expect(got.json.result).toMatchObject({
      id: sent.json.result.id,
      contextId: sent.json.result.contextId,
      status: { state: 'completed' },
    });
    expect(got.json.result.history).toHaveLength(1);
    const streamed = await rpc('/a2a/echo', {
      jsonrpc: '2.0',
      id: 3,
      method: 'message/stream',
      params: {
        message: {
          kind: 'message',
          messageId: 'v03-2',
          role: 'user',
          parts: [{ kind: 'text', text: 'stream' }],
        },
      },
    });
    const blocks = sseResults(streamed.text);
    expect(blocks[0].kind).toBe('task');
    expect(blocks.at(-1)).toMatchObject({
      kind: 'status-update',
      status: { state: 'completed' },
      final: true,
    });
    expect(blocks.at(-2)).toMatchObject({ kind: 'artifact-update' });
  });

  it('message/stream to a confirmation ends input-required with the call as a data part; tasks/resubscribe', async () => {
    const streamed = await rpc('/a2a/mail', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/stream',
      params: {
        message: {
          kind: 'message',
          messageId: 'v03-3',
          role: 'user',
          parts: [{ kind: 'text', text: 'mail' }],
        },
      },
    });
    const blocks = sseResults(streamed.text);
    const last = blocks.at(-1);
    // (the SDK's v0.3 translation marks only terminal states `final`; the stream ends here all the same)
    expect(last).toMatchObject({ kind: 'status-update', status: { state: 'input-required' } });
    const [part] = last.status.message.parts;
    expect(part).toMatchObject({ kind: 'data', data: { kind: 'confirmation', tool: 'send_mail' } });
    // resubscribing to the paused task: the task, then its state
    const resubscribed = await rpc('/a2a/mail', {
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/resubscribe',
      params: { id: last.taskId },
    });
    const again = sseResults(resubscribed.text);
    expect(again[0]).toMatchObject({ kind: 'task', id: last.taskId });
    expect(again.at(-1)).toMatchObject({ kind: 'status-update', status: { state: 'input-required' } });
    // an ended task cannot be resubscribed: the stream carries the error
    await engine.cancel(last.taskId);
    const ended = await rpc('/a2a/mail', {
      jsonrpc: '2.0',
      id: 3,
      method: 'tasks/resubscribe',
      params: { id: last.taskId },
    });
    expect(ended.text).toMatch(/event: error\ndata: /);
    expect(JSON.parse(ended.text.split('event: error\ndata: ')[1] ?? '').error.code).toBe(-32004);
  });
});

describe('long streams', () => {
  it('carry heartbeat comments while a step runs, then the rest of the task', async () => {
    const response = await fetch(`${base}/a2a/held`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/stream',
        params: {
          message: {
            kind: 'message',
            messageId: 'h1',
            role: 'user',
            parts: [{ kind: 'text', text: 'hold' }],
          },
        },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes(': heartbeat\n\n') && !text.includes('"artifact-update"')) gates[2]!.open();
    }
    expect(text).toContain(': heartbeat\n\n');
    expect(text).toContain('"kind":"artifact-update"');
    expect(text).toMatch(/"state":"completed"[^\n]*"final":true/);
  });
});

describe('another API process', () => {
  it('serves the task a dropped stream started elsewhere: get, and resubscribe to its end', async () => {
    const first = await clientFor(`${base}/a2a/relay`);
    const dropped = new AbortController();
    const head = await collect(
      first.sendMessageStream(send('relay'), { signal: dropped.signal }),
      () => true,
    );
    dropped.abort();
    const started = head[0]?.payload;
    const taskId = started?.$case === 'task' ? started.value.id : '';
    expect(taskId).toMatch(/^inv_/);
    const second = await clientFor(`${otherBase}/a2a/relay`);
    expect((await second.getTask({ tenant: '', id: taskId })).contextId).toBe(
      started?.$case === 'task' && started.value.contextId,
    );
    const events: StreamResponse[] = [];
    for await (const event of second.resubscribeTask({ tenant: '', id: taskId })) {
      events.push(event);
      if (events.length === 1) gates[3]!.open();
    }
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(await second.getTask({ tenant: '', id: taskId }))).toEqual(['relayer']);
  });
});

describe('errors', () => {
  it("answers the spec's codes and stores nothing", async () => {
    const before = (await listInvocations(engine.store.db, { limit: 1000 })).length;
    const v1 = { 'A2A-Version': '1.0' };
    expect((await rpc('/a2a/echo', '{"jsonrpc":', v1)).json.error.code).toBe(-32700);
    const xml = await fetch(`${base}/a2a/echo`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml', ...v1 },
      body: '<x/>',
    });
    expect(((await xml.json()) as Json).error.code).toBe(-32005);
    expect(
      (await rpc('/a2a/echo', { jsonrpc: '2.0', id: 1, method: 'Nope', params: {} }, v1)).json.error.code,
    ).toBe(-32601);
    expect(
      (await rpc('/a2a/echo', { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'inv_nope' } }, v1))
        .json.error.code,
    ).toBe(-32001);
    expect(
      (await rpc('/a2a/echo', { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: 'inv_nope' } }))
        .json.error.code,
    ).toBe(-32001);
    const noMessageId = {
      jsonrpc: '2.0',
      id: 4,
      method: 'SendMessage',
      params: { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    };
    expect((await rpc('/a2a/echo', noMessageId, v1)).json.error.code).toBe(-32602);
    const noText = {
      jsonrpc: '2.0',
      id: 5,
      method: 'SendMessage',
      params: { message: { messageId: 'e5', role: 'ROLE_USER', parts: [] } },
    };
    expect((await rpc('/a2a/echo', noText, v1)).json.error.code).toBe(-32602);
    const unknownTask = {
      jsonrpc: '2.0',
      id: 6,
      method: 'SendMessage',
      params: { message: { messageId: 'e6', taskId: 'inv_nope', role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    };
    expect((await rpc('/a2a/echo', unknownTask, v1)).json.error.code).toBe(-32001);
    expect(
      (
        await rpc(
          '/a2a/echo',
          {
            jsonrpc: '2.0',
            id: 7,
            method: 'CreateTaskPushNotificationConfig',
            params: { taskId: 'x', url: 'http://x' },
          },
          v1,
        )
      ).json.error.code,
    ).toBe(-32003);
    expect(
      (
        await rpc(
          '/a2a/echo',
          { jsonrpc: '2.0', id: 8, method: 'GetTask', params: { id: 'x' } },
          { 'A2A-Version': '9.0' },
        )
      ).json.error.code,
    ).toBe(-32009);
    // another app's task is not found through this app
    const mailTask = await engine.enqueue({ app: 'mail', userId: 'u', input: 'hi' });
    await engine.wait(mailTask.invocationId);
    expect(
      (
        await rpc(
          '/a2a/echo',
          { jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: mailTask.invocationId } },
          v1,
        )
      ).json.error.code,
    ).toBe(-32001);
    expect((await listInvocations(engine.store.db, { limit: 1000 })).length).toBe(before + 1);
  });

  it('with API keys: no key is 401, a key of another app is refused, the app key works', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: { kind: 'message', messageId: 'k1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
      },
    };
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${keyedBase}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const before = (await listInvocations(engine.store.db, { limit: 1000 })).length;
    expect((await post('/a2a/echo')).status).toBe(401);
    expect((await post('/a2a/echo', { authorization: `Bearer ${OTHER}` })).status).toBe(404);
    expect((await post('/api/a2a/default/echo', { authorization: `Bearer ${OTHER}` })).status).toBe(404);
    expect((await listInvocations(engine.store.db, { limit: 1000 })).length).toBe(before);
    const client = await clientFor(`${keyedBase}/a2a/echo`, { authorization: `Bearer ${KEY}` });
    const task = asTask(await client.sendMessage(send('with key')));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await engine.get(task.id)).userId).toBe('echoes');
  });
});

describe("a caller's trace context", () => {
  it("a traceparent on message/send makes the task a run of the caller's trace", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const sent = await rpc(
      '/a2a/echo',
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: 'traced-1',
            role: 'user',
            parts: [{ kind: 'text', text: 'hi' }],
          },
          configuration: { blocking: true },
        },
      },
      { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    );
    expect(sent.status).toBe(200);
    const view = await engine.get(sent.json.result.id as string);
    expect(view.traceId).toBe(traceId);
  });
});
