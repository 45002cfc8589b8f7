/**
 * `agentloom dev` as an A2A server driven by `@a2a-js/sdk` 0.3.x's own client (A2A v0.3,
 * the protocol kagent's and ADK's clients speak), installed as `a2a-sdk-v03`, at kagent's path: the card; a
 * confirmation asked as `input-required` on send, answered by a stream on the same task (events in order, the final
 * artifact, `completed` last); get with a history length; a dropped stream resumed with `tasks/resubscribe` and ended
 * by `tasks/cancel`; bad requests answered with the spec's codes, and nothing stored for them.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type {
  Message,
  MessageSendParams,
  Task,
  TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent,
} from 'a2a-sdk-v03';
import { ClientFactory, TaskNotCancelableError, TaskNotFoundError, type Client } from 'a2a-sdk-v03/client';
import { freePort } from '../support/processes/cli.js';
import { DEV_START_MS, DevProcesses, invocationCount } from '../support/processes/a2a-dev.js';

const devs = new DevProcesses();
afterAll(() => devs.stopAll());

/** What a v0.3 stream carries. */
type A2AStreamEventData = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

function client(url: string, app: string): Promise<Client> {
  return new ClientFactory().createFromUrl(`${url}/api/a2a/default/${app}/`);
}

/** A v0.3 user message: a text, or one data part. */
function send(
  text: string,
  options: { taskId?: string; data?: Record<string, unknown> } = {},
): MessageSendParams {
  const message: Message = {
    kind: 'message',
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    role: 'user',
    parts: options.data ? [{ kind: 'data', data: options.data }] : [{ kind: 'text', text }],
    ...(options.taskId ? { taskId: options.taskId } : {}),
  };
  return { message, configuration: { blocking: true } };
}

function asTask(result: Task | Message): Task {
  expect(result.kind).toBe('task');
  return result as Task;
}

function artifactTexts(task: Task): string[] {
  return (task.artifacts ?? []).flatMap((a) => a.parts.flatMap((p) => (p.kind === 'text' ? [p.text] : [])));
}

/** The kind of a stream event, with its state for a status update. */
function shape(event: A2AStreamEventData): string {
  return event.kind === 'status-update' ? `status:${event.status.state}` : event.kind;
}

async function rpc(url: string, body: string | object): Promise<{ error?: { code: number } }> {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return (await answer.json()) as { error?: { code: number } };
}

describe('agentloom dev over A2A v0.3 (@a2a-js/sdk 0.3.x client)', () => {
  it(
    'card, send, stream, get, cancel, resubscribe, input-required answered on the same task, errors',
    async () => {
      const { url } = await devs.start(await freePort());
      const mail = await client(url, 'mail');

      const card = await mail.getAgentCard();
      expect(card).toMatchObject({
        name: 'mail',
        url: `${url}/api/a2a/default/mail`,
        capabilities: { streaming: true },
      });

      // send: the confirmation is input-required, the pending call a data part of the status message
      const paused = asTask(await mail.sendMessage(send('mail bob')));
      expect(paused.status.state).toBe('input-required');
      const part = paused.status.message?.parts[0];
      expect(part?.kind).toBe('data');
      const asked = (part as { data: Record<string, unknown> }).data;
      expect(asked).toMatchObject({ kind: 'confirmation', tool: 'send_mail', args: { to: 'bob' } });

      // stream the answer on the same task: its events in order, the artifact before `completed`, one task id
      const events: A2AStreamEventData[] = [];
      const answer = send('', {
        taskId: paused.id,
        data: { callId: asked.callId, confirmed: true, payload: { cc: 'ann' } },
      });
      for await (const event of mail.sendMessageStream(answer)) events.push(event);
      const shapes = events.map(shape);
      expect(shapes.at(-1)).toBe('status:completed');
      expect(shapes.indexOf('artifact-update')).toBeGreaterThan(-1);
      expect(shapes.indexOf('artifact-update')).toBeLessThan(shapes.length - 1);
      expect(shapes.filter((s) => s.startsWith('status:')).slice(0, -1)).not.toContain('status:completed');
      const ids = events.map((e) => (e.kind === 'task' ? e.id : e.kind === 'message' ? e.taskId : e.taskId));
      expect(new Set(ids)).toEqual(new Set([paused.id]));
      const artifact = events.find((e) => e.kind === 'artifact-update');
      expect(artifact?.kind === 'artifact-update' && artifact.artifact.parts[0]).toMatchObject({
        kind: 'text',
        text: 'mail sent with {"cc":"ann"}',
      });
      const last = events.at(-1);
      expect(last?.kind === 'status-update' && last.final).toBe(true);

      // get: the same task, completed, its artifact; the history cut to the length asked
      const got = await mail.getTask({ id: paused.id, historyLength: 1 });
      expect(got).toMatchObject({
        id: paused.id,
        contextId: paused.contextId,
        status: { state: 'completed' },
      });
      expect(artifactTexts(got)).toEqual(['mail sent with {"cc":"ann"}']);
      expect(got.history?.length).toBeLessThanOrEqual(1);

      // a stream dropped after its first event, resumed with tasks/resubscribe, ended by tasks/cancel
      const waiter = await client(url, 'waiter');
      const dropped = new AbortController();
      let taskId = '';
      for await (const event of waiter.sendMessageStream(send('wait'), { signal: dropped.signal })) {
        taskId = event.kind === 'task' ? event.id : event.kind === 'message' ? '' : event.taskId;
        break;
      }
      dropped.abort();
      expect(taskId).toMatch(/^inv_/);
      const resumed: A2AStreamEventData[] = [];
      for await (const event of waiter.resubscribeTask({ id: taskId })) {
        resumed.push(event);
        if (resumed.length === 1) {
          const cancelled = await waiter.cancelTask({ id: taskId });
          expect(cancelled).toMatchObject({ id: taskId, status: { state: 'canceled' } });
        }
      }
      expect(resumed[0]?.kind).toBe('task');
      expect(shape(resumed.at(-1) as A2AStreamEventData)).toBe('status:canceled');
      expect((await waiter.getTask({ id: taskId })).status.state).toBe('canceled');

      // bad requests: the spec's codes (as the v0.3 client's errors, and raw), nothing stored
      const before = await invocationCount(url, 'mail');
      await expect(mail.getTask({ id: 'inv_nope' })).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(mail.sendMessage(send('x', { taskId: 'inv_nope' }))).rejects.toBeInstanceOf(
        TaskNotFoundError,
      );
      await expect(mail.cancelTask({ id: paused.id })).rejects.toBeInstanceOf(TaskNotCancelableError);
      const endpoint = `${url}/api/a2a/default/mail`;
      const push = {
        jsonrpc: '2.0',
        id: 3,
        method: 'tasks/pushNotificationConfig/set',
        params: { taskId: paused.id, pushNotificationConfig: { url: 'http://x' } },
      };
      expect((await rpc(endpoint, push)).error?.code).toBe(-32003);
      expect((await rpc(endpoint, '{"jsonrpc":')).error?.code).toBe(-32700);
      expect(
        (await rpc(endpoint, { jsonrpc: '2.0', id: 1, method: 'tasks/nope', params: {} })).error?.code,
      ).toBe(-32601);
      const noMessageId = {
        jsonrpc: '2.0',
        id: 2,
        method: 'message/send',
        params: { message: { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      };
      expect((await rpc(endpoint, noMessageId)).error?.code).toBe(-32602);
      expect(await invocationCount(url, 'mail')).toBe(before);
    },
    DEV_START_MS + 120_000,
  );
});
