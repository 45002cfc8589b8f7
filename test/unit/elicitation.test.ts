/**
 * The pure parts of elicitation: which requests of a node's journal were left open by an attempt that stopped, and
 * the call deadline that stops while a human is asked.
 */
import { describe, expect, it } from 'vitest';
import { openElicitations, REQUEST_ELICITATION } from '../../src/agents/llm/journal.js';
import { AgentloomError } from '../../src/core/errors.js';
import { withDeadline } from '../../src/core/deadline.js';
import type { Event } from '../../src/core/event.js';
import { answerLines } from '../../src/cli/client/pending.js';

function event(seq: number, parts: NonNullable<Event['content']>['parts']): Event {
  return {
    id: `e${seq}`,
    invocationId: 'inv',
    author: seq % 2 ? 'agent' : 'user',
    nodePath: 'root',
    seq,
    timestamp: seq,
    content: { role: 'model', parts },
    actions: { stateDelta: {}, artifactDelta: {} },
  };
}

describe('openElicitations', () => {
  it('lists the questions with no answer event, and no other call', () => {
    const events = [
      event(1, [{ functionCall: { id: 'call1', name: 'ask', args: {} } }]),
      event(2, [{ functionCall: { id: 'q1', name: REQUEST_ELICITATION, args: {} } }]),
      event(3, [
        { functionResponse: { id: 'q1', name: REQUEST_ELICITATION, response: { action: 'accept' } } },
      ]),
      event(4, [{ functionCall: { id: 'q2', name: REQUEST_ELICITATION, args: {} } }]),
    ];
    expect(openElicitations(events)).toEqual(['q2']);
    expect(openElicitations(events.slice(0, 3))).toEqual([]);
  });
});

describe('withDeadline holds', () => {
  const error = () => new AgentloomError('TIMEOUT', 'late');

  it('does not count the time a hold is on', async () => {
    let hold: (() => () => void) | undefined;
    const result = withDeadline(
      async () => {
        const release = hold!();
        await new Promise((done) => setTimeout(done, 300));
        release();
        return 'done';
      },
      { parent: new AbortController().signal, timeoutMs: 150, error, holds: (h) => (hold = h) },
    );
    await expect(result).resolves.toBe('done');
  });

  it('still ends a call that runs past its time without a hold', async () => {
    const result = withDeadline(() => new Promise((done) => setTimeout(done, 2_000)), {
      parent: new AbortController().signal,
      timeoutMs: 50,
      error,
      holds: () => undefined,
    });
    await expect(result).rejects.toMatchObject({ code: 'TIMEOUT' });
  });
});

describe('the CLI hint of a question', () => {
  it('says what is asked and how to answer it, naming the fields', () => {
    const lines = answerLines(
      'inv_1',
      {
        callId: 'elicit_1',
        kind: 'elicitation',
        name: 'ask',
        args: {},
        nodePath: 'root',
        originalCallId: 'call_1',
        elicitation: {
          message: 'Who are you?',
          requestedSchema: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { type: 'integer' } },
          },
        },
      },
      { url: 'http://127.0.0.1:8080' },
    );
    expect(lines[0]).toBe('  asks:    Who are you?');
    expect(lines[1]).toContain(`respond inv_1 elicit_1 '{"action":"accept","content":{"name":…,"age":…}}'`);
    expect(lines[2]).toContain('{"action":"decline"}');
  });
});
