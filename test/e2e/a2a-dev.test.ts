/**
 * `agentloom dev` as an A2A server, driven by `@a2a-js/sdk`'s own 1.x client at kagent's path: the card,
 * a confirmation as `input-required` answered on the same task, a long-running call answered with `{callId,
 * response}` after a restart of `dev` (the task is the invocation: it outlives the process), a dropped stream
 * resumed with SubscribeToTask and ended by CancelTask, and a v0.3 `message/send` with curl's body from the README;
 * then an answer streamed in order to its final artifact, and bad requests answered with the spec's codes, nothing
 * stored for them. (The 0.3.x client's run of the same is a2a-dev-v03.test.ts.)
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { v03Request } from '../support/client/a2a-client.js';
import { freePort } from '../support/processes/cli.js';
import { DEV_START_MS, DevProcesses, invocationCount } from '../support/processes/a2a-dev.js';

const START_TIMEOUT_MS = DEV_START_MS + 10_000;
const devs = new DevProcesses();
afterAll(() => devs.stopAll());
const startDev = (port: number) => devs.start(port);

function client(url: string, app: string): Promise<Client> {
  return new ClientFactory().createFromUrl(`${url}/api/a2a/default/${app}/`);
}

function message(text: string, extra: Record<string, unknown> = {}, data?: unknown): SendMessageRequest {
  return SendMessageRequest.fromJSON({
    message: {
      messageId: `m-${Math.random().toString(36).slice(2)}`,
      role: 'ROLE_USER',
      parts: data === undefined ? [{ text }] : [{ data }],
      ...extra,
    },
  });
}

function pendingOf(task: Task): Record<string, unknown> {
  const part = task.status?.message?.parts[0]?.content;
  expect(part?.$case).toBe('data');
  return (part as { value: Record<string, unknown> }).value;
}

function outputOf(task: Task): string | undefined {
  const part = task.artifacts[0]?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : undefined;
}

function stateOf(event: StreamResponse | undefined): TaskState | undefined {
  return event?.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : undefined;
}

describe('agentloom dev over A2A', () => {
  it(
    'serves cards and tasks at kagent paths; tasks outlive a restart; streams resume; v0.3 works',
    async () => {
      const port = await freePort();
      let { dev, url } = await startDev(port);

      const card = await (await fetch(`${url}/api/a2a/default/mail/.well-known/agent-card.json`)).json();
      expect(card).toMatchObject({
        name: 'mail',
        url: `${url}/api/a2a/default/mail`,
        capabilities: { streaming: true },
      });

      // a confirmation: input-required, answered by a DataPart on the same task
      const mail = await client(url, 'mail');
      const paused = (await mail.sendMessage(message('mail bob'))) as Task;
      expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const asked = pendingOf(paused);
      expect(asked).toMatchObject({ kind: 'confirmation', tool: 'send_mail', args: { to: 'bob' } });
      const done = (await mail.sendMessage(
        message('', { taskId: paused.id }, { callId: asked.callId, confirmed: true, payload: { cc: 'ann' } }),
      )) as Task;
      expect(done.id).toBe(paused.id);
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(outputOf(done)).toBe('mail sent with {"cc":"ann"}');

      // a long-running call paused, then dev restarted: the task is still there, and answering it completes it
      const ticket = await client(url, 'ticket');
      const waiting = (await ticket.sendMessage(message('open one'))) as Task;
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const call = pendingOf(waiting);
      expect(call).toMatchObject({ kind: 'long_running', tool: 'open_ticket' });
      await dev.stop();
      ({ dev, url } = await startDev(port));
      const after = await client(url, 'ticket');
      expect((await after.getTask({ tenant: '', id: waiting.id })).status?.state).toBe(
        TaskState.TASK_STATE_INPUT_REQUIRED,
      );
      const answered = (await after.sendMessage(
        message(
          '',
          { taskId: waiting.id, contextId: waiting.contextId },
          { callId: call.callId, response: { status: 'fixed' } },
        ),
      )) as Task;
      expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(outputOf(answered)).toBe('ticket answered: {"status":"fixed"}');
      expect(outputOf(await (await client(url, 'mail')).getTask({ tenant: '', id: paused.id }))).toBe(
        'mail sent with {"cc":"ann"}',
      );

      // a stream dropped after its first event, resumed with SubscribeToTask, ended by CancelTask
      const waiter = await client(url, 'waiter');
      const dropped = new AbortController();
      let taskId = '';
      for await (const event of waiter.sendMessageStream(message('wait'), { signal: dropped.signal })) {
        if (event.payload?.$case === 'task') taskId = event.payload.value.id;
        break;
      }
      dropped.abort();
      expect(taskId).not.toBe('');
      const resumed: StreamResponse[] = [];
      for await (const event of waiter.resubscribeTask({ tenant: '', id: taskId })) {
        resumed.push(event);
        if (resumed.length === 1) {
          const cancelled = await waiter.cancelTask({ tenant: '', id: taskId, metadata: {} });
          expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
        }
      }
      expect(resumed[0]?.payload?.$case).toBe('task');
      expect(stateOf(resumed.at(-1))).toBe(TaskState.TASK_STATE_CANCELED);

      // v0.3: the README's curl body
      const legacy = await fetch(`${url}/api/a2a/default/mail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(v03Request('message/send', 'mail bob', { messageId: 'm1' })),
      });
      const body = (await legacy.json()) as { result: { kind: string; status: { state: string } } };
      expect(body.result).toMatchObject({ kind: 'task', status: { state: 'input-required' } });
    },
    START_TIMEOUT_MS * 2,
  );

  it(
    'streams an answer in order to its final artifact; bad requests get the spec codes and store nothing',
    async () => {
      const { url } = await devs.start(await freePort(), { data: 'errors' });
      const mail = await client(url, 'mail');
      const paused = (await mail.sendMessage(message('mail bob'))) as Task;
      const asked = pendingOf(paused);
      const events: StreamResponse[] = [];
      const answer = message('', { taskId: paused.id }, { callId: asked.callId, confirmed: false });
      for await (const event of mail.sendMessageStream(answer)) events.push(event);
      const shapes = events.map((e) =>
        e.payload?.$case === 'statusUpdate' ? TaskState[stateOf(e) as TaskState] : e.payload?.$case,
      );
      expect(shapes.at(-1)).toBe('TASK_STATE_COMPLETED');
      const artifactAt = shapes.indexOf('artifactUpdate');
      expect(artifactAt).toBeGreaterThan(-1);
      expect(artifactAt).toBeLessThan(shapes.length - 1);
      const artifact = events[artifactAt]?.payload;
      expect(
        artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content,
      ).toMatchObject({
        $case: 'text',
        value: expect.stringMatching(/^mail not sent: /),
      });
      const ids = events.map((e) =>
        e.payload?.$case === 'task' ? e.payload.value.id : (e.payload?.value as { taskId?: string }).taskId,
      );
      expect(new Set(ids)).toEqual(new Set([paused.id]));

      const before = await invocationCount(url, 'mail');
      await expect(mail.getTask({ tenant: '', id: 'inv_nope' })).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(mail.sendMessage(message('x', { taskId: 'inv_nope' }))).rejects.toBeInstanceOf(
        TaskNotFoundError,
      );
      await expect(mail.cancelTask({ tenant: '', id: paused.id, metadata: {} })).rejects.toBeInstanceOf(
        TaskNotCancelableError,
      );
      const v1 = { 'content-type': 'application/json', 'A2A-Version': '1.0' };
      const endpoint = `${url}/api/a2a/default/mail`;
      const code = async (body: string) =>
        (
          (await (await fetch(endpoint, { method: 'POST', headers: v1, body })).json()) as {
            error: { code: number };
          }
        ).error.code;
      expect(await code('{"jsonrpc":')).toBe(-32700);
      expect(await code(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'Nope', params: {} }))).toBe(-32601);
      const noMessageId = { role: 'ROLE_USER', parts: [{ text: 'x' }] };
      expect(
        await code(
          JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'SendMessage', params: { message: noMessageId } }),
        ),
      ).toBe(-32602);
      expect(await invocationCount(url, 'mail')).toBe(before);
    },
    START_TIMEOUT_MS,
  );
});
