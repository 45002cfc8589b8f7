/** What the RemoteA2aAgent integration tests share: a client engine, the stored task id (crashes: fixtures/faults.ts). */
import { pino } from 'pino';
import { createEngine, type BaseAgent, type Engine, type Event } from '../../../src/index.js';
import { createTestDatabase } from '../services/services.js';

/** An embedded engine on its own database whose one app, `client`, is `agent`. */
export async function clientEngine(
  agent: BaseAgent,
  options: { faults?: (point: string) => void } = {},
): Promise<Engine> {
  return createEngine({
    apps: [{ name: 'client', agent }],
    database: await createTestDatabase(),
    queue: 'local',
    reconcileIntervalMs: 0,
    leaseMs: 30_000,
    logger: pino({ level: 'silent' }),
    ...(options.faults ? { faults: options.faults } : {}),
  });
}

/** The stored events of an invocation. */
export async function eventsOf(engine: Engine, invocationId: string): Promise<Event[]> {
  const events: Event[] = [];
  for await (const event of engine.events(invocationId)) events.push(event);
  return events;
}

/** The remote task id the node of `author` stored, once it did. */
export async function storedTaskId(
  engine: Engine,
  invocationId: string,
  author: string,
): Promise<string | undefined> {
  const events = await eventsOf(engine, invocationId);
  const marker = events.find((e) => e.author === author && e.actions.agentState?.remoteTask);
  return (marker?.actions.agentState?.remoteTask as { taskId?: string } | undefined)?.taskId;
}
