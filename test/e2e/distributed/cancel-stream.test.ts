/**
 * Across processes: a cancel from the test process's producer engine aborts a tool running on a
 * worker (its signal fires within 1 s) and the invocation ends cancelled; partial events of a streaming LlmAgent
 * running on a worker reach `engine.events(id, { follow: true, partial: true })` in the test process.
 */
import { describe, expect, it } from 'vitest';
import type { Event } from '../../../src/index.js';
import {
  Cluster,
  enqueueRuns,
  fileServices,
  openGate,
  waitForMarks,
} from '../../support/processes/cluster.js';
import { waitFor } from '../../support/assert/wait-for.js';
import { STREAM_FINAL_TEXT } from '../fixtures/distributed-apps.js';

const { options, engine, db } = await fileServices();

describe('distributed cancel and streaming', () => {
  it('aborts a tool running on a worker within 1 s of a cancel from another process', async () => {
    const cluster = new Cluster(options);
    await cluster.start(2);
    const { ids } = await enqueueRuns(engine, 'cancel', 1, 'cancel');
    const id = ids[0] as string;
    const [started] = await waitForMarks(db, 'tool-start', id);
    expect(cluster.byPid(started?.pid ?? -1)).toBeDefined();

    const cancelledAtMs = Date.now();
    expect((await engine.cancel(id)).status).toBe('cancelled');
    const [aborted] = await waitForMarks(db, 'signal-aborted', id, { timeoutMs: 10_000 });
    const latencyMs = (aborted?.atMs ?? Infinity) - cancelledAtMs;
    console.log(`cancel: the tool's signal fired ${latencyMs} ms after engine.cancel() in the test process`);
    expect(aborted?.pid).toBe(started?.pid);
    expect(latencyMs).toBeLessThan(1_000);
    const settled = await engine.wait(id, { timeoutMs: 30_000 });
    expect(settled.status).toBe('cancelled');
  });

  it('delivers partial events of a step on a worker to a follower in the test process', async () => {
    const cluster = new Cluster(options);
    await cluster.start(1);
    const { ids, runs } = await enqueueRuns(engine, 'stream', 1, 'stream');
    const id = ids[0] as string;
    const run = [...runs.keys()][0] as string;
    const seen: Event[] = [];
    const following = (async () => {
      for await (const event of engine.events(id, { follow: true, partial: true })) seen.push(event);
    })();
    try {
      // The model streams chunks until the gate opens: open it once one reached this process.
      await waitFor(() => seen.some((e) => e.partial), { timeoutMs: 30_000, what: 'a partial event' });
    } finally {
      await openGate(db, `stream:${run}`);
    }
    await following;
    const partials = seen.filter((e) => e.partial);
    console.log(`stream: ${partials.length} partial event(s) reached the test process`);
    for (const p of partials) {
      expect(p).toMatchObject({ invocationId: id, author: 'streamer', partial: true });
      expect(p.content?.parts[0]?.text).toMatch(/^chunk \d+ $/);
    }
    const stored = seen.filter((e) => !e.partial);
    expect(stored.at(-1)?.content?.parts[0]?.text).toBe(STREAM_FINAL_TEXT);
    expect((await engine.get(id)).status).toBe('completed');
    // Partials are never stored.
    const session = await engine.getSession((await engine.get(id)).sessionId);
    expect(session.events.some((e) => e.partial)).toBe(false);
    expect(session.events.map((e) => e.id)).toEqual(stored.map((e) => e.id));
  });
});
