/**
 * Every app an A2A server, on PostgreSQL through a real API server, driven by `@a2a-js/sdk`'s own 1.x client
 * (the setting: test/support/scenarios/a2a-server.ts): the card (kagent's path too, the bearer scheme with API keys),
 * blocking and non-blocking sends, a stream in order with the output as the final artifact, get with
 * historyLength, cancel, resubscribe after a dropped stream, a confirmation as `input-required` answered with a
 * DataPart on the same task, a conversation continued by contextId. v0.3 shapes, long streams, another API
 * process, errors and trace context: a2a-server-protocol.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ListTasksRequest, TaskState, type StreamResponse } from '@a2a-js/sdk';
import type { Engine } from '../../src/index.js';
import { asTask, clientFor, collect, send, textsOf } from '../support/client/a2a-client.js';
import { a2aServerSetting, type Json } from '../support/scenarios/a2a-server.js';

const setting = a2aServerSetting();
const { gates, rpc } = setting;
let engine: Engine;
let base: string;
let keyedBase: string;
beforeAll(() => {
  ({ engine, base, keyedBase } = setting);
});

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
    expect(setting.sends()).toBe(0);
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
    expect(setting.sends()).toBe(0);
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
    expect(setting.sends()).toBe(1);
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
