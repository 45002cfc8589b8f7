/**
 * Fork over HTTP and from the CLI: `POST /v1/invocations/:id/fork`, `GET …/forks`, the invocation's
 * `forkedFrom`, and `agentloom fork ID --at PATH --state JSON --instruction AGENT=TEXT` against a real API server;
 * bad input answers 400 naming the field (the CLI prints it and exits 1).
 */
import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../src/index.js';
import { runCli, show } from '../support/processes/cli.js';
import { serveEngine } from '../support/services/api-servers.js';
import { backends, engineOn } from '../support/services/engines.js';
import { forkApps, Ledger, respond } from '../fixtures/apps/fork-apps.js';

const backend = backends[0]!;

describe('fork over the API and the CLI', () => {
  const model = new ScriptedModel({ respond });
  const ledger = new Ledger();
  const api = serveEngine(() => engineOn(backend, { apps: forkApps(model, ledger) }), {
    processMetrics: false,
  });

  async function post(
    path: string,
    body: unknown,
  ): Promise<{
    status: number;
    body: Record<string, unknown> & { error?: unknown; forks?: unknown; invocationId?: unknown };
  }> {
    const response = await fetch(`${api.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as Record<string, unknown> & {
        error?: unknown;
        forks?: unknown;
        invocationId?: unknown;
      },
    };
  }

  async function original(): Promise<string> {
    const { invocationId } = await api.engine.enqueue({ app: 'writer', userId: 'u1', input: 'tea' });
    expect((await api.engine.wait(invocationId, { timeoutMs: 30_000 })).status).toBe('completed');
    return invocationId;
  }

  it('forks through the route; the fork says where it came from and the original lists it', async () => {
    const id = await original();
    const calls = model.calls;
    const created = await post(`/v1/invocations/${id}/fork`, {
      at: 'writer/refine/drafter#1',
      state: { approve: true },
    });
    expect(created.status).toBe(201);
    const forkId = created.body.invocationId as string;
    expect((await api.engine.wait(forkId, { timeoutMs: 30_000 })).status).toBe('completed');
    expect(model.calls - calls).toBe(2);
    const view = (await (await fetch(`${api.base}/v1/invocations/${forkId}`)).json()) as Record<
      string,
      unknown
    > & { error?: unknown; forks?: unknown; invocationId?: unknown };
    expect(view).toMatchObject({ forkedFrom: id, fork: { at: 'writer/refine/drafter#1' } });
    const forks = (await (await fetch(`${api.base}/v1/invocations/${id}/forks`)).json()) as Record<
      string,
      unknown
    > & { error?: unknown; forks?: unknown; invocationId?: unknown };
    expect(forks.forks).toMatchObject([{ id: forkId, at: 'writer/refine/drafter#1', status: 'completed' }]);
    const bad = await post(`/v1/invocations/${id}/fork`, { at: 'writer/nowhere' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION', details: { field: 'at' } });
  });

  it('agentloom fork ID --at PATH --state JSON --instruction AGENT=TEXT', async () => {
    const id = await original();
    const result = await runCli([
      'fork',
      id,
      '--at',
      'writer/refine/drafter#1',
      '--state',
      '{"approve": true}',
      '--instruction',
      'drafter=Short, on {notes}.',
      '--url',
      api.base,
    ]);
    expect(result.code, show(result)).toBe(0);
    const forkId = result.stdout.trim();
    const done = await api.engine.wait(forkId, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'completed', forkedFrom: id });
    expect(done.fork).toMatchObject({
      instruction: { drafter: 'Short, on {notes}.' },
      state: { approve: true },
    });
    const wrong = await runCli(['fork', id, '--at', 'writer/nowhere', '--url', api.base]);
    expect(wrong.code, show(wrong)).toBe(1);
    expect(wrong.stderr).toContain('at: "writer/nowhere" names no node');
    const usage = await runCli(['fork', id, '--at', 'writer', '--instruction', 'nothing', '--url', api.base]);
    expect(usage.code, show(usage)).toBe(2);
    expect(usage.stderr).toContain('--instruction takes AGENT=TEXT');
  });

  it('agentloom replay ID and replay --app A --last N: recorded answers only, forks and replays left out', async () => {
    const ids = [await original(), await original()];
    const [calls, tools] = [model.calls, ledger.total];
    const one = await runCli(['replay', ids[0]!, '--url', api.base]);
    expect(one.code, show(one)).toBe(0);
    expect(one.stdout).toContain(`${ids[0]}: same`);
    const many = await runCli(['replay', '--app', 'writer', '--last', '2', '--url', api.base]);
    expect(many.code, show(many)).toBe(0);
    expect(many.stdout).toContain(`${ids[1]}: same`);
    expect(many.stdout).toContain('2 of 2 replayed the same');
    expect([model.calls, ledger.total]).toEqual([calls, tools]);
    const usage = await runCli(['replay', '--url', api.base]);
    expect(usage.code, show(usage)).toBe(2);
  });

  it('GET /v1/diff and agentloom diff A B: aligned by node path, the first divergence marked', async () => {
    const id = await original();
    const created = await post(`/v1/invocations/${id}/fork`, {
      at: 'writer/refine/drafter#1',
      state: { approve: true },
    });
    const forkId = created.body.invocationId as string;
    await api.engine.wait(forkId, { timeoutMs: 30_000 });
    const response = await fetch(`${api.base}/v1/diff?a=${id}&b=${forkId}`);
    expect(response.status).toBe(200);
    const diff = (await response.json()) as {
      firstDivergence: string | null;
      nodes: { path: string; same: boolean; a: unknown; b: unknown }[];
    };
    const row = (path: string) => diff.nodes.find((n) => n.path === path);
    expect(row('writer/researcher')?.same).toBe(true);
    expect(row('writer/refine/critic#0')?.same).toBe(true);
    // critic#1 called exit_loop in the fork; iteration 2 ran only in the original.
    expect(diff.firstDivergence).toBe('writer/refine/critic#1');
    expect(row('writer/refine/drafter#2')).toMatchObject({ same: false, b: null });
    // researcher: two model calls of 10 tokens each, on both sides (the fork's are the copied ones).
    expect(row('writer/researcher')).toMatchObject({ a: { tokens: 20, modelCalls: 2 }, b: { tokens: 20 } });
    const cli = await runCli(['diff', id, forkId, '--url', api.base]);
    expect(cli.code, show(cli)).toBe(1);
    expect(cli.stdout).toMatch(/>>writer\/refine\/critic#1 /);
    expect(cli.stdout).toContain('first divergence: writer/refine/critic#1');
    expect(cli.stdout).toContain('2 model (20 tokens)');
    const same = await runCli(['diff', id, id, '--url', api.base]);
    expect(same.code, show(same)).toBe(0);
    expect(same.stdout).toContain('no divergence');
  });
});
