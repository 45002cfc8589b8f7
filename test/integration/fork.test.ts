/**
 * engine.fork: the history up to `at` is copied — no model or tool call before it is made
 * again (a scripted model and a tool ledger count), the copied events equal the original's — and the run goes on
 * live from `at` with the change; a fork at a parallel branch keeps the other branches' results. PGlite and
 * PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ScriptedModel, type Engine, type Event } from '../../src/index.js';
import { backends, engineOn } from '../support/services/engines.js';
import { forkApps, Ledger, respond } from '../fixtures/apps/fork-apps.js';

/** What must be equal between an original event and its copy. */
const shape = (e: Event) => ({
  author: e.author,
  nodePath: e.nodePath,
  branch: e.branch,
  content: e.content,
  actions: e.actions,
});

async function eventsOf(engine: Engine, invocationId: string): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of engine.events(invocationId)) events.push(e);
  return events;
}

describe.each(backends)('engine.fork on $name', (backend) => {
  let engine: Engine;
  let model: ScriptedModel;
  let ledger: Ledger;

  beforeEach(async () => {
    model = new ScriptedModel({ respond });
    ledger = new Ledger();
    engine = await engineOn(backend, { apps: forkApps(model, ledger) });
  });
  afterEach(() => engine.close());

  async function completed(app: string): Promise<string> {
    const { invocationId } = await engine.enqueue({ app, userId: 'u1', input: 'write about tea' });
    const result = await engine.wait(invocationId, { timeoutMs: 30_000 });
    expect(result.status).toBe('completed');
    return invocationId;
  }

  it('forks at the second loop iteration with an edited state: nothing before is called again, the copy is equal, what follows sees the change', async () => {
    const original = await completed('writer');
    // researcher 2 calls, then 3 iterations of drafter + critic; one lookup.
    expect(model.calls).toBe(8);
    expect(ledger.total).toBe(1);
    const at = 'writer/refine/drafter#1';
    const fork = await engine.fork(original, {
      at,
      state: { approve: true },
      instruction: { drafter: 'Be brief about {notes}.' },
    });
    const result = await engine.wait(fork.invocationId, { timeoutMs: 30_000 });
    expect(result.status).toBe('completed');
    expect(result.forkedFrom).toBe(original);
    // Only drafter#1 and critic#1 ran: the researcher, its lookup and iteration 0 were copied.
    expect(model.calls).toBe(10);
    expect(model.callsBy('researcher')).toBe(2);
    expect(model.callsBy('drafter')).toBe(4);
    expect(model.callsBy('critic')).toBe(4);
    expect(ledger.total).toBe(1);

    const before = await eventsOf(engine, original);
    const cut = before.findIndex((e) => e.nodePath === at);
    const forked = await eventsOf(engine, fork.invocationId);
    expect(forked.slice(0, cut).map(shape)).toEqual(before.slice(0, cut).map(shape));
    // Then the patch, and the changed run: the new instruction, the critic exits in iteration 1, no iteration 2.
    expect(forked[cut]).toMatchObject({ author: 'user', actions: { stateDelta: { approve: true } } });
    const drafted = forked.find((e) => e.nodePath === at && e.content);
    expect(drafted?.content?.parts[0]?.text).toContain(
      'Be brief about researcher notes [You are researcher.].',
    );
    const critic = forked.filter((e) => e.nodePath === 'writer/refine/critic#1');
    expect(critic.some((e) => e.actions.escalate === true)).toBe(true);
    expect(forked.some((e) => e.nodePath.endsWith('#2'))).toBe(false);
    expect(before.some((e) => e.nodePath.endsWith('#2'))).toBe(true);
    // The original is untouched and lists its fork.
    expect((await engine.get(original)).status).toBe('completed');
    expect(await eventsOf(engine, original)).toEqual(before);
    expect((await engine.forks(original)).map((f) => [f.id, f.at])).toEqual([[fork.invocationId, at]]);
    const session = await engine.getSession(fork.sessionId);
    expect(session.state).toMatchObject({ approve: true, notes: 'researcher notes [You are researcher.]' });
  });

  it('forks at a parallel branch: the other branches keep their results, only that branch and what follows run', async () => {
    const original = await completed('fan');
    expect(model.calls).toBe(7);
    expect(ledger.total).toBe(3);
    const fork = await engine.fork(original, {
      at: 'fan/research/docs',
      instruction: { docs: 'Only official docs.' },
    });
    const result = await engine.wait(fork.invocationId, { timeoutMs: 30_000 });
    expect(result.status).toBe('completed');
    expect(result.output).toBe(
      'summary: web notes [You are web.] | docs notes [Only official docs.] | news notes [You are news.]',
    );
    expect(model.callsBy('web')).toBe(2);
    expect(model.callsBy('news')).toBe(2);
    expect(model.callsBy('docs')).toBe(4);
    expect(model.callsBy('summary')).toBe(2);
    expect(Object.fromEntries(ledger.calls)).toEqual({ 'lookup:web': 1, 'lookup:docs': 2, 'lookup:news': 1 });
    const before = await eventsOf(engine, original);
    const forked = await eventsOf(engine, fork.invocationId);
    for (const branch of ['fan/research/web', 'fan/research/news']) {
      const of = (events: Event[]) => events.filter((e) => e.nodePath === branch).map(shape);
      expect(of(forked)).toEqual(of(before));
    }
    const nodes = await engine.nodes(fork.invocationId);
    expect(nodes.find((n) => n.path === 'fan/research/web')?.attempt).toBe(0);
    expect(nodes.find((n) => n.path === 'fan/research/docs')?.attempt).toBeGreaterThan(0);
  });

  it('refuses an `at` that names no node of the run, and an instruction for an unknown agent, naming the field', async () => {
    const original = await completed('writer');
    await expect(engine.fork(original, { at: 'writer/refine/drafter#7' })).rejects.toMatchObject({
      code: 'VALIDATION',
      details: { field: 'at' },
      message: expect.stringContaining('writer/refine/drafter#1'),
    });
    await expect(
      engine.fork(original, { at: 'writer/refine', instruction: { ghost: 'x' } }),
    ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'instruction.ghost' } });
    expect(model.calls).toBe(8);
  });

  it('refuses a fork of a run whose app changed since unless asked (definition: current)', async () => {
    const database = await backend.target();
    const first = await engineOn(
      { ...backend, target: async () => database },
      { apps: forkApps(model, ledger) },
    );
    let original: string;
    try {
      ({ invocationId: original } = await first.enqueue({ app: 'writer', userId: 'u1', input: 'tea' }));
      expect((await first.wait(original, { timeoutMs: 30_000 })).status).toBe('completed');
    } finally {
      await first.close();
    }
    // The loop allows 4 iterations now: another definition hash.
    const changed = await engineOn(
      { ...backend, target: async () => database },
      { apps: forkApps(model, ledger, 4) },
    );
    try {
      const at = 'writer/refine/drafter#1';
      await expect(changed.fork(original, { at })).rejects.toMatchObject({
        code: 'DEFINITION_MISMATCH',
        details: { field: 'definition' },
        message: expect.stringContaining("definition: 'current'"),
      });
      const fork = await changed.fork(original, { at, definition: 'current', state: { approve: true } });
      expect(await changed.wait(fork.invocationId, { timeoutMs: 30_000 })).toMatchObject({
        status: 'completed',
        forkedFrom: original,
      });
    } finally {
      await changed.close();
    }
  });
});
