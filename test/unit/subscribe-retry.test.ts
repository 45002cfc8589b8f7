/**
 * A subscription that found its backend away is not kept (the PostgreSQL-only mode's restart bug had this shape):
 * the partial-event feed subscribes to the bus again on the next call, and the settle watch listens again on its
 * next `ready()`. The backends here are stand-ins that refuse the first subscription and accept the next (pure
 * logic: what is cached); the store's own follow is shown against a real restarted PostgreSQL in
 * test/integration/listen-reconnect.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { Bus } from '../../src/core/bus.js';
import { PartialFeed } from '../../src/engine/bus-messages.js';
import { SettleWatch } from '../../src/engine/runs/follow/settle-watch.js';
import type { Store } from '../../src/store/store.js';

/** Refuses the first `failures` subscriptions, then accepts; counts the tries. */
function flaky(failures: number): { tries: () => number; subscribe: () => Promise<() => void> } {
  let tries = 0;
  return {
    tries: () => tries,
    subscribe: async () => {
      tries++;
      if (tries <= failures) throw new Error('ECONNREFUSED');
      return () => undefined;
    },
  };
}

describe('subscriptions that found their backend away', () => {
  it('the partial-event feed subscribes again on the next call', async () => {
    const backend = flaky(1);
    const bus = {
      kind: 'memory',
      publish: async () => undefined,
      subscribe: backend.subscribe,
      close: async () => undefined,
    } as Bus;
    const feed = new PartialFeed(bus);
    await expect(feed.subscribe()).rejects.toThrow('ECONNREFUSED');
    await expect(feed.subscribe()).resolves.toBeTypeOf('function');
    await feed.subscribe(); // subscribed now: kept
    expect(backend.tries()).toBe(2);
  });

  it('the settle watch listens again on its next ready()', async () => {
    const backend = flaky(1);
    const store = { listen: async () => backend.subscribe() } as unknown as Store;
    const watch = new SettleWatch(store);
    await watch.ready(); // a failure is swallowed: waits read as before
    watch.enqueued('inv_a');
    expect(watch.knownUnsettled('inv_a')).toBe(false);
    await watch.ready();
    watch.enqueued('inv_b');
    expect(watch.knownUnsettled('inv_b')).toBe(true);
    await watch.ready();
    expect(backend.tries()).toBe(2);
  });
});
