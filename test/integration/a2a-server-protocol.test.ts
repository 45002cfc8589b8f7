/**
 * The A2A server beyond the 1.x client's happy paths, on PostgreSQL through a real API server (the setting:
 * test/support/scenarios/a2a-server.ts): v0.3-shaped JSON-RPC (`message/send`, `message/stream`, `tasks/resubscribe` …) on
 * the same endpoint; heartbeat comments on a long stream; a task a dropped stream started served by another API
 * process; the spec's error codes for bad requests, which store nothing; API keys: none → 401, another app's key →
 * refused; a caller's traceparent making the task a run of its trace.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import type { Engine } from '../../src/index.js';
import { listInvocations } from '../../src/store/repos/invocations.js';
import {
  asTask,
  clientFor,
  collect,
  send,
  sseResults,
  textsOf,
  v03Request,
} from '../support/client/a2a-client.js';
import { a2aServerSetting, KEY, OTHER, type Json } from '../support/scenarios/a2a-server.js';

const setting = a2aServerSetting();
const { gates, rpc } = setting;
let engine: Engine;
let base: string;
let keyedBase: string;
let otherBase: string;
beforeAll(() => {
  ({ engine, base, keyedBase, otherBase } = setting);
});

describe('v0.3 clients', () => {
  it('message/send, tasks/get and message/stream in v0.3 shapes on the same endpoint', async () => {
    const sent = await rpc(
      '/api/a2a/default/echo',
      v03Request('message/send', 'old client', { messageId: 'v03-1' }),
    );
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
    const streamed = await rpc(
      '/a2a/echo',
      v03Request('message/stream', 'stream', { id: 3, messageId: 'v03-2' }),
    );
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
    const streamed = await rpc('/a2a/mail', v03Request('message/stream', 'mail', { messageId: 'v03-3' }));
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
      body: JSON.stringify(v03Request('message/stream', 'hold', { messageId: 'h1' })),
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
    const sent = await rpc('/a2a/echo', v03Request('message/send', 'hi', { messageId: 'traced-1' }), {
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    });
    expect(sent.status).toBe(200);
    const view = await engine.get(sent.json.result.id as string);
    expect(view.traceId).toBe(traceId);
  });
});
