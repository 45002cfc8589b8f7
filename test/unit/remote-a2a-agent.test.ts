/**
 * RemoteA2aAgent without a network: what its constructor refuses, where its card is read, what it sends (the
 * session since it last answered, others' texts as context), and how a remote task's answers fold into its output.
 */
import { describe, expect, it } from 'vitest';
import { TaskState } from '@a2a-js/sdk';
import { RemoteA2aAgent, type Event } from '../../src/index.js';
import { cardUrlOf } from '../../src/agents/remote/a2a-connection.js';
import { messagePartsOf } from '../../src/agents/remote/remote-journal.js';
import { RemoteTask } from '../../src/agents/remote/remote-task.js';

function event(author: string, text: string, extra: Partial<Event> = {}): Event {
  return {
    id: `e-${Math.random()}`,
    invocationId: 'inv',
    author,
    nodePath: author,
    seq: 0,
    timestamp: 0,
    content: { role: author === 'user' ? 'user' : 'model', parts: [{ text }] },
    actions: { stateDelta: {}, artifactDelta: {} },
    ...extra,
  } as Event;
}

const part = (text: string) => ({
  content: { $case: 'text' as const, value: text },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

describe('RemoteA2aAgent', () => {
  it('refuses a card that is no http(s) URL or object, and a bad timeoutMs, naming the agent', () => {
    expect(() => new RemoteA2aAgent({ name: 'r', agentCard: 'ftp://x/card' })).toThrow(
      /RemoteA2aAgent "r": agentCard must be an http\(s\) URL/,
    );
    expect(() => new RemoteA2aAgent({ name: 'r', agentCard: 42 as unknown as string })).toThrow(
      /agentCard must be a URL or an agent card object/,
    );
    expect(() => new RemoteA2aAgent({ name: 'r', agentCard: 'http://x', timeoutMs: 0 })).toThrow(
      /timeoutMs must be a positive number/,
    );
    expect(() => new RemoteA2aAgent({ name: 'bad-name', agentCard: 'http://x' })).toThrow(/not valid/);
    const sideEffects = 'sometimes' as 'unsafe';
    expect(() => new RemoteA2aAgent({ name: 'r', agentCard: 'http://x', sideEffects })).toThrow(
      /RemoteA2aAgent "r": sideEffects must be 'idempotent' or 'unsafe'/,
    );
    expect(new RemoteA2aAgent({ name: 'r', agentCard: 'http://x' }).sideEffects).toBe('idempotent');
  });

  it("reads the card at the agent's well-known path, or at a URL that is the card", () => {
    expect(cardUrlOf('http://h:8080/a2a/app')).toBe('http://h:8080/a2a/app/.well-known/agent-card.json');
    expect(cardUrlOf('http://h:8080/a2a/app/')).toBe('http://h:8080/a2a/app/.well-known/agent-card.json');
    expect(cardUrlOf('http://h/x/.well-known/agent.json')).toBe('http://h/x/.well-known/agent.json');
  });

  it('sends what happened since it last answered: the user as is, other agents as context, no partials', () => {
    const parts = messagePartsOf(
      [
        event('user', 'first question'),
        event('remote', 'my earlier answer'),
        event('user', 'write about otters'),
        event('drafter', 'a draft', {}),
        event('drafter', 'streaming…', { partial: true }),
        event('sibling', 'hidden', { branch: 'fan.1' }),
      ],
      'remote',
      'fan.0',
    );
    expect(parts.map((p) => p.content)).toEqual([
      { $case: 'text', value: 'write about otters' },
      { $case: 'text', value: 'For context: [drafter] said: a draft' },
    ]);
  });
});

describe('RemoteTask', () => {
  it('folds a stream: the task id at once, appended artifact chunks, the final state', () => {
    const task = new RemoteTask();
    const ids = { taskId: 't1', contextId: 'c1', metadata: undefined };
    task.applyStream({
      payload: {
        $case: 'statusUpdate',
        value: {
          ...ids,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
        },
      },
    });
    expect([task.taskId, task.contextId, task.settled]).toEqual(['t1', 'c1', false]);
    const artifact = (text: string) => ({
      artifactId: 'a',
      name: '',
      description: '',
      parts: [part(text)],
      metadata: undefined,
      extensions: [],
    });
    const chunk = (text: string, append: boolean) =>
      task.applyStream({
        payload: {
          $case: 'artifactUpdate',
          value: { ...ids, artifact: artifact(text), append, lastChunk: false },
        },
      });
    expect(chunk('Hello, ', false)).toBe('Hello, ');
    chunk('otters', true);
    task.applyStream({
      payload: {
        $case: 'statusUpdate',
        value: {
          ...ids,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
        },
      },
    });
    expect(task.settled).toBe(true);
    expect(task.outputText()).toBe('Hello, otters');
  });
});
