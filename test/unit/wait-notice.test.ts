/**
 * What `wait` takes from a notification of an invocation's end (pure logic, on a stand-in store that delivers the
 * payloads it is given): the view it carries is returned without a read; a view that cannot be made sense of is
 * ignored and the invocation read instead; a notification of another invocation whose view names this one (its
 * `forkedFrom`) wakes nothing. The real statement and LISTEN are shown in test/integration/run-start.test.ts.
 */
import { expect, it } from 'vitest';
import { waitForSettled } from '../../src/engine/runs/follow/follow.js';
import type { InvocationView } from '../../src/engine/runs/views.js';
import type { Store } from '../../src/store/store.js';

const ID = 'inv_a';

/** A store whose LISTEN hands the payloads `deliver` is given to the listener. */
function standIn(): { store: Store; deliver: (payload: string) => void } {
  let listener: (payload: string) => void = () => undefined;
  const store = {
    listen: async (_channel: string, onPayload: (payload: string) => void) => {
      listener = onPayload;
      return async () => undefined;
    },
  } as unknown as Store;
  return { store, deliver: (payload) => listener(payload) };
}

const view = (id: string, status: string, output: string): InvocationView =>
  ({ id, status, output }) as unknown as InvocationView;

/** Reads that count themselves and answer `answer`; views from notices as given, or a throw for `bad`. */
function reads(answer: InvocationView) {
  let count = 0;
  return {
    count: () => count,
    read: async () => {
      count++;
      return answer;
    },
    fromNotice: (v: unknown) => {
      if ((v as { bad?: boolean }).bad) throw new Error('not a view');
      return v as InvocationView;
    },
  };
}

const known = { knownUnsettled: () => true };
const tick = () => new Promise((resolve) => setImmediate(resolve));

it('returns the view a notification of the end carried, without a read', async () => {
  const { store, deliver } = standIn();
  const r = reads(view(ID, 'completed', 'from a read'));
  const waiting = waitForSettled(store, r, ID, 60_000, known);
  await tick();
  deliver(JSON.stringify({ id: ID, status: 'completed', view: view(ID, 'completed', 'from the notice') }));
  expect((await waiting).output).toBe('from the notice');
  expect(r.count()).toBe(0);
});

it('reads the invocation when the view in the notification cannot be made sense of', async () => {
  const { store, deliver } = standIn();
  const r = reads(view(ID, 'completed', 'from a read'));
  const waiting = waitForSettled(store, r, ID, 60_000, known);
  await tick();
  deliver(JSON.stringify({ id: ID, status: 'completed', view: { bad: true } }));
  expect((await waiting).output).toBe('from a read');
  expect(r.count()).toBe(1);
});

it("ignores another invocation's end whose view names this one", async () => {
  const { store, deliver } = standIn();
  const r = reads(view(ID, 'completed', 'from a read'));
  const waiting = waitForSettled(store, r, ID, 60_000, known);
  await tick();
  const fork = { ...view('inv_fork', 'completed', 'the fork'), forkedFrom: ID };
  deliver(JSON.stringify({ id: 'inv_fork', status: 'completed', view: fork }));
  await tick();
  expect(r.count()).toBe(0);
  deliver(JSON.stringify({ id: ID, status: 'completed', view: view(ID, 'completed', 'from the notice') }));
  expect((await waiting).output).toBe('from the notice');
  expect(r.count()).toBe(0);
});
