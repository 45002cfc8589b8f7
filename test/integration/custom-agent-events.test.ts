/**
 * When a custom agent's events are stored (docs/semantics-additions.md H): an event that nothing in the step
 * reads back is stored before the step's next write or at the latest with its completion, and within moments
 * while the step goes on; a step re-run after its worker stopped stores each event once. On PGlite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import {
  BaseAgent,
  createEvent,
  SequentialAgent,
  type Event,
  type InvocationContext,
} from '../../src/index.js';
import { gate } from '../fixtures/agents.js';
import { backends, engineOn } from '../support/services/engines.js';
import { waitFor } from '../support/assert/wait-for.js';

/** Yields `first`, waits for its gate, then yields `second` and ends. */
class Gated extends BaseAgent {
  constructor(private readonly gate: Promise<void>) {
    super({ name: 'gated' });
  }

  protected override async *runImpl(_ctx: InvocationContext): AsyncGenerator<Event, void, undefined> {
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'first' }] } });
    await this.gate;
    yield createEvent({ author: this.name, content: { role: 'model', parts: [{ text: 'second' }] } });
  }
}

const texts = (events: Event[]) =>
  events.filter((e) => e.author === 'gated').map((e) => e.content?.parts[0]?.text);

async function storedEvents(engine: Awaited<ReturnType<typeof engineOn>>, invocationId: string) {
  const events: Event[] = [];
  for await (const event of engine.events(invocationId)) events.push(event);
  return events;
}

describe.each(backends)("a custom agent's events on $name", (backend) => {
  it('stores an event while its step still runs, without waiting for the step to end', async () => {
    const { promise, open } = gate();
    const engine = await engineOn(backend, {
      apps: [{ name: 'app', agent: new SequentialAgent({ name: 'seq', subAgents: [new Gated(promise)] }) }],
    });
    try {
      const { invocationId } = await engine.enqueue({ app: 'app', userId: 'u', input: 'go' });
      // The step cannot end before the gate opens, and the gate opens only once 'first' is stored: if the event
      // waited for the step's end, this would never finish.
      await waitFor(async () => texts(await storedEvents(engine, invocationId)).includes('first'), {
        timeoutMs: 20_000,
        intervalMs: 20,
        what: "'first' to be stored",
      });
      expect((await engine.get(invocationId)).status).toBe('running');
      open();
      expect((await engine.wait(invocationId, { timeoutMs: 20_000 })).status).toBe('completed');
      expect(texts(await storedEvents(engine, invocationId))).toEqual(['first', 'second']);
    } finally {
      open();
      await engine.close();
    }
  });

  it('stores each event once when a stopped step runs again on another engine', async () => {
    const stuck = gate();
    const database = await backend.target();
    const first = await engineOn(
      { ...backend, target: async () => database },
      {
        apps: [
          { name: 'app', agent: new SequentialAgent({ name: 'seq', subAgents: [new Gated(stuck.promise)] }) },
        ],
      },
    );
    let invocationId = '';
    try {
      ({ invocationId } = await first.enqueue({ app: 'app', userId: 'u', input: 'go' }));
      await waitFor(async () => texts(await storedEvents(first, invocationId)).includes('first'), {
        timeoutMs: 20_000,
        intervalMs: 20,
        what: "'first' to be stored",
      });
      // Shutdown with no grace: the step is stopped and its lease released (its run is not finished).
      await first.drain({ graceMs: 0 });
    } finally {
      await first.close();
      stuck.open();
    }
    const open = gate();
    open.open();
    const second = await engineOn(
      { ...backend, target: async () => database },
      {
        apps: [
          { name: 'app', agent: new SequentialAgent({ name: 'seq', subAgents: [new Gated(open.promise)] }) },
        ],
        reconcileIntervalMs: 50,
        reconcileStaleMs: 100,
      },
    );
    try {
      expect((await second.wait(invocationId, { timeoutMs: 30_000 })).status).toBe('completed');
      // The re-run yields 'first' again: already stored, it is skipped; 'second' is stored once.
      expect(texts(await storedEvents(second, invocationId))).toEqual(['first', 'second']);
    } finally {
      await second.close();
    }
  });
});
