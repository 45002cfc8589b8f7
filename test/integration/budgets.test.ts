/**
 * Budgets of model spending (README "Budgets"): a loop pauses exactly at the first call that would cross
 * its token budget; raising the budget resumes it where it paused (no call repeated), stopping cancels it, `fail`
 * fails it; parallel branches share the run's budget and overshoot it by at most the calls in flight; budgets set
 * in YAML and the API, bad ones refused naming the field; spend per run and per agent in the view and /metrics.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  estimateTokens,
  LlmAgent,
  LoopAgent,
  MIN_OUTPUT_TOKENS,
  ParallelAgent,
  ScriptedModel,
  type Engine,
  type InvocationView,
} from '../../src/index.js';
import { loadAppsFromYaml } from '../../src/config/apps/load-apps.js';
import { StepMetrics } from '../../src/workers/step-metrics.js';
import { serveEngine } from '../support/services/api-servers.js';
import { backends, engineOn } from '../support/services/engines.js';

/** Each call reports 150 tokens (100 in, 50 out). */
const USAGE = { promptTokens: 100, outputTokens: 50, totalTokens: 150 };

/** A model answering "step" with {@link USAGE}, after `delayMs` (so parallel calls are in flight together). */
function model(delayMs = 0): ScriptedModel {
  return new ScriptedModel({
    respond: async () => {
      if (delayMs > 0) await sleep(delayMs);
      return 'step';
    },
    usage: USAGE,
  });
}

/** A LoopAgent of `iterations` around one LlmAgent `worker` whose first call reserves little (maxOutputTokens 100). */
function loop(m: ScriptedModel, iterations = 20, name = 'worker'): LoopAgent {
  return new LoopAgent({
    name: `${name}_loop`,
    maxIterations: iterations,
    subAgents: [new LlmAgent({ name, model: m, generateContentConfig: { maxOutputTokens: 100 } })],
  });
}

async function pausedOn(engine: Engine, id: string): Promise<InvocationView> {
  const view = await engine.wait(id, { timeoutMs: 60_000 });
  expect(view.status, JSON.stringify(view.error)).toBe('paused');
  return view;
}

describe.each(backends)('budgets on $name', (backend) => {
  it('pauses a loop at exactly the 7th call under tokens: 1000 (900 spent); raising resumes it, stop cancels', async () => {
    const m = model();
    const metrics = new StepMetrics({ processMetrics: false });
    const engine = await engineOn(backend, {
      apps: [{ name: 'looper', agent: loop(m) }],
      observer: metrics.observer,
    });
    try {
      const { invocationId } = await engine.enqueue({
        app: 'looper',
        userId: 'u',
        input: 'go',
        budget: { tokens: 1000 },
      });
      const paused = await pausedOn(engine, invocationId);
      // 6 calls × 150 = 900; a 7th reserves 150 (the largest call so far) → 1,050 > 1,000: held before it is sent.
      expect(m.calls).toBe(6);
      expect(paused.pending).toHaveLength(1);
      expect(paused.pending[0]).toMatchObject({
        kind: 'budget',
        name: 'budget',
        args: { scope: 'run', limit: 'tokens', spent: 900, reserved: 150, max: 1000, agent: 'worker' },
      });
      expect(paused.spent).toMatchObject({ tokens: 900, inputTokens: 600, outputTokens: 300, modelCalls: 6 });
      expect(paused.spent.byAgent.worker).toMatchObject({ tokens: 900, modelCalls: 6 });
      expect(paused.budget).toEqual({ tokens: 1000 });
      const metricText = await metrics.registry.metrics();
      expect(metricText).toContain('agentloom_spent_tokens_total{app="looper",agent="worker"} 900');

      // A bad answer names the field and what to write.
      const callId = paused.pending[0]!.callId;
      await expect(
        engine.respond({ invocationId, functionResponses: [{ id: callId, response: { action: 'more' } }] }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'response.action' } });
      await expect(
        engine.respond({
          invocationId,
          functionResponses: [{ id: callId, response: { action: 'raise', budget: { tokens: -1 } } }],
        }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'response.budget.tokens' } });

      await engine.respond({
        invocationId,
        functionResponses: [{ id: callId, response: { action: 'raise', budget: { tokens: 2000 } } }],
        by: 'ann',
      });
      // It continues from where it paused: 13 × 150 = 1,950, a 14th would reach 2,100.
      const again = await pausedOn(engine, invocationId);
      expect(m.calls).toBe(13);
      expect(again.spent.tokens).toBe(1950);
      expect(again.budget).toEqual({ tokens: 2000 });
      expect(again.pending[0]).toMatchObject({ kind: 'budget', args: { spent: 1950, max: 2000 } });

      await engine.respond({
        invocationId,
        functionResponses: [{ id: again.pending[0]!.callId, response: { action: 'stop' } }],
      });
      const stopped = await engine.wait(invocationId, { timeoutMs: 30_000 });
      expect(stopped.status).toBe('cancelled');
      expect(m.calls).toBe(13);
      expect(stopped.spent.tokens).toBe(1950);
    } finally {
      await engine.close();
    }
  });

  it('raised enough, the loop runs to its end; onExceeded fail fails with BUDGET_EXCEEDED after 6 calls', async () => {
    const m = model();
    const f = model();
    const engine = await engineOn(backend, {
      apps: [
        { name: 'looper', agent: loop(m, 10) },
        { name: 'strict', agent: loop(f, 10, 'strict_worker'), budget: { tokens: 1000, onExceeded: 'fail' } },
      ],
    });
    try {
      const { invocationId } = await engine.enqueue({
        app: 'looper',
        userId: 'u',
        input: 'go',
        budget: { tokens: 1000 },
      });
      const paused = await pausedOn(engine, invocationId);
      await engine.respond({
        invocationId,
        functionResponses: [
          { id: paused.pending[0]!.callId, response: { action: 'raise', budget: { tokens: 100_000 } } },
        ],
      });
      const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
      expect(done.status).toBe('completed');
      expect(m.calls).toBe(10);
      expect(done.spent.tokens).toBe(1500);

      const failed = await engine.wait(
        (await engine.enqueue({ app: 'strict', userId: 'u', input: 'go' })).invocationId,
        { timeoutMs: 60_000 },
      );
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
      expect(failed.error?.message).toContain('budget.tokens');
      expect(f.calls).toBe(6);
      expect(failed.spent.tokens).toBe(900);

      // Retried with the budget raised: it goes on from its journal (no stored call again) to the end.
      await expect(engine.retry(failed.id, { budget: { tokens: -5 } })).rejects.toMatchObject({
        code: 'VALIDATION',
        details: { field: 'budget.tokens' },
      });
      await engine.retry(failed.id, { budget: { tokens: 100_000 } });
      const retried = await engine.wait(failed.id, { timeoutMs: 60_000 });
      expect(retried.status).toBe('completed');
      expect(f.calls).toBe(10);
      expect(retried.spent.tokens).toBe(1500);
      expect(retried.budget).toMatchObject({ tokens: 100_000, onExceeded: 'fail' });
    } finally {
      await engine.close();
    }
  });

  it("README's loop as written (no maxOutputTokens): 6 calls under tokens: 1000, the first one's output lowered to what is left", async () => {
    const m = model();
    const agent = new LoopAgent({
      name: 'plain_loop',
      maxIterations: 20,
      subAgents: [new LlmAgent({ name: 'plain', model: m })],
    });
    const engine = await engineOn(backend, { apps: [{ name: 'plain', agent }] });
    try {
      const { invocationId } = await engine.enqueue({
        app: 'plain',
        userId: 'u',
        input: 'go',
        budget: { tokens: 1000 },
      });
      const paused = await pausedOn(engine, invocationId);
      expect(m.calls).toBe(6);
      expect(paused.pending[0]).toMatchObject({
        kind: 'budget',
        args: { scope: 'run', limit: 'tokens', spent: 900, reserved: 150, max: 1000, agent: 'plain' },
      });
      // The first call's reservation (its input + 1,024) does not fit 1,000: it is sent with its output limit
      // lowered to what is left after its estimated input; the later ones reserve 150 and are sent as written.
      const [first, ...rest] = m.requests;
      const left =
        1000 - estimateTokens(JSON.stringify([first!.systemInstruction, first!.contents, first!.tools]));
      expect(left).toBeGreaterThan(900);
      expect(first!.generateContentConfig).toEqual({ maxOutputTokens: left });
      expect(rest.map((r) => r.generateContentConfig)).toEqual(rest.map(() => undefined));
      // The stored model event records the limit the call was sent with.
      const limits: unknown[] = [];
      for await (const e of engine.events(invocationId)) {
        if (e.actions.modelRequest) limits.push(e.actions.modelRequest.maxOutputTokens);
      }
      expect(limits).toEqual([left, undefined, undefined, undefined, undefined, undefined]);
    } finally {
      await engine.close();
    }
  });

  it('a first call reserves budgetOutputReservation; below MIN_OUTPUT_TOKENS left, nothing is sent', async () => {
    const bare = (m: ScriptedModel) => new LlmAgent({ name: 'bare', model: m });
    for (const [tokens, reservation, calls] of [
      // 200 reserved + the input fit 1,000: sent as written.
      [1000, 200, 1],
      // Fewer than MIN_OUTPUT_TOKENS left after the input: held before its first call.
      [MIN_OUTPUT_TOKENS, undefined, 0],
    ] as const) {
      const m = model();
      const engine = await engineOn(backend, {
        apps: [{ name: 'bare', agent: bare(m), budget: { tokens } }],
        ...(reservation === undefined ? {} : { budgetOutputReservation: reservation }),
      });
      try {
        const { invocationId } = await engine.enqueue({ app: 'bare', userId: 'u', input: 'go' });
        const view = await engine.wait(invocationId, { timeoutMs: 60_000 });
        expect(view.status).toBe(calls === 0 ? 'paused' : 'completed');
        expect(m.calls).toBe(calls);
        if (calls > 0) expect(m.requests[0]!.generateContentConfig).toBeUndefined();
        else expect(view.pending[0]).toMatchObject({ kind: 'budget', args: { limit: 'tokens', spent: 0 } });
      } finally {
        await engine.close();
      }
    }
    await expect(engineOn(backend, { apps: [], budgetOutputReservation: -1 })).rejects.toMatchObject({
      code: 'CONFIG',
      details: { field: 'budgetOutputReservation' },
    });
  });

  it("an agent's budget bounds its subtree; modelCalls counts committed calls", async () => {
    const m = model();
    const agent = new LoopAgent({
      name: 'outer',
      maxIterations: 10,
      subAgents: [
        new LlmAgent({
          name: 'capped',
          model: m,
          generateContentConfig: { maxOutputTokens: 100 },
          budget: { modelCalls: 3 },
        }),
      ],
    });
    const engine = await engineOn(backend, { apps: [{ name: 'capped', agent }] });
    try {
      const { invocationId } = await engine.enqueue({ app: 'capped', userId: 'u', input: 'go' });
      const paused = await pausedOn(engine, invocationId);
      expect(m.calls).toBe(3);
      expect(paused.pending[0]).toMatchObject({
        kind: 'budget',
        args: { scope: 'capped', limit: 'modelCalls', spent: 3, max: 3 },
      });
      await engine.respond({
        invocationId,
        functionResponses: [
          { id: paused.pending[0]!.callId, response: { action: 'raise', budget: { modelCalls: 5 } } },
        ],
      });
      const again = await pausedOn(engine, invocationId);
      expect(m.calls).toBe(5);
      expect(again.budget).toEqual({ agents: { capped: { modelCalls: 5 } } });
    } finally {
      await engine.close();
    }
  });

  it('parallel branches share the run budget: the overshoot is at most the calls in flight', async () => {
    const N = 4;
    const models = Array.from({ length: N }, () => model(30));
    const agent = new ParallelAgent({
      name: 'fan',
      subAgents: models.map((m, i) => loop(m, 50, `b${i}`)),
    });
    const engine = await engineOn(backend, { apps: [{ name: 'fan', agent }] });
    try {
      const { invocationId } = await engine.enqueue({
        app: 'fan',
        userId: 'u',
        input: 'go',
        budget: { tokens: 3000 },
      });
      const paused = await pausedOn(engine, invocationId);
      const calls = models.reduce((n, m) => n + m.calls, 0);
      const overshoot = paused.spent.tokens - 3000;
      console.log(
        `parallel budget: ${N} branches, ${calls} calls, spent ${paused.spent.tokens}, overshoot ${overshoot}`,
      );
      expect(paused.spent.tokens).toBe(calls * 150);
      // Each branch has at most one call in flight; each of them passed the check with what was committed then, so
      // at most N − 1 calls' worth goes past the limit (the one that fitted, plus N − 1 that started with it).
      expect(overshoot).toBeLessThanOrEqual((N - 1) * 150);
      expect(paused.spent.tokens + 150).toBeGreaterThan(3000);
      // Every branch that wanted to go on is paused on the budget; one answer resumes them all.
      expect(paused.pending.length).toBeGreaterThanOrEqual(1);
      expect(paused.pending.every((p) => p.kind === 'budget')).toBe(true);
      await engine.respond({
        invocationId,
        functionResponses: [
          { id: paused.pending[0]!.callId, response: { action: 'raise', budget: { tokens: 1_000_000 } } },
        ],
      });
      const done = await engine.wait(invocationId, { timeoutMs: 120_000 });
      expect(done.status).toBe('completed');
      expect(done.spent.tokens).toBe(N * 50 * 150);
      expect(Object.keys(done.spent.byAgent).sort()).toEqual(['b0', 'b1', 'b2', 'b3']);
    } finally {
      await engine.close();
    }
  });

  it('refuses bad budgets naming the field: in code, at enqueue and in YAML', async () => {
    expect(() => new LlmAgent({ name: 'x', model: model(), budget: { tokens: 1.5 } as never })).toThrow(
      /budget\.tokens must be an integer/,
    );
    const engine = await engineOn(backend, { apps: [{ name: 'looper', agent: loop(model()) }] });
    try {
      await expect(
        engine.enqueue({ app: 'looper', userId: 'u', input: 'go', budget: { token: 5 } as never }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'budget.token' } });
      await expect(
        engine.enqueue({ app: 'looper', userId: 'u', input: 'go', budget: { onExceeded: 'stop' } as never }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'budget.onExceeded' } });
    } finally {
      await engine.close();
    }
    const dir = mkdtempSync(join(tmpdir(), 'budget-yaml-'));
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'app: bad\nroot: w\nbudget: { tokens: lots }\nagents:\n  - { name: w, type: LlmAgent, model: m, budget: { costUsd: -1 } }\n',
    );
    const err = (await loadAppsFromYaml(bad, { models: { m: model() } }).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/budget\.tokens must be an integer/);
    expect(err.message).toMatch(/budget\.costUsd must be a number/);
  });

  describe('YAML and the API', () => {
    const m = model();
    const api = serveEngine(
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'budget-yaml-'));
        const file = join(dir, 'app.yaml');
        writeFileSync(
          file,
          [
            'app: yamlloop',
            'root: yaml_loop',
            'budget: { tokens: 600 }',
            'agents:',
            '  - name: yaml_loop',
            '    type: LoopAgent',
            '    maxIterations: 20',
            '    subAgents: [yaml_worker]',
            '  - name: yaml_worker',
            '    type: LlmAgent',
            '    model: m',
            '    generateContentConfig: { maxOutputTokens: 100 }',
            '    budget: { modelCalls: 100 }',
            '',
          ].join('\n'),
        );
        const { apps } = await loadAppsFromYaml(file, { models: { m } });
        expect(apps[0]?.budget).toEqual({ tokens: 600 });
        expect(apps[0]?.agent.subAgents[0]?.budget).toEqual({ modelCalls: 100 });
        return engineOn(backend, { apps, models: { m } });
      },
      { processMetrics: false },
    );

    async function post(
      body: Record<string, unknown>,
    ): Promise<{ status: number; body: Record<string, unknown> }> {
      const r = await fetch(`${api.base}/v1/apps/yamlloop/invocations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    }

    it("the app's YAML budget applies to every run; the API's overrides it field by field; bad ones get 400", async () => {
      const viaApp = await post({ userId: 'u', input: 'go' });
      expect(viaApp.status).toBe(202);
      const first = await pausedOn(api.engine, viaApp.body.invocationId as string);
      expect(first.spent.tokens).toBe(600);
      expect(first.budget).toEqual({ tokens: 600 });

      const viaApi = await post({ userId: 'u', input: 'go', budget: { tokens: 300, costUsd: 1 } });
      expect(viaApi.status).toBe(202);
      const id = viaApi.body.invocationId as string;
      await pausedOn(api.engine, id);
      const got = await fetch(`${api.base}/v1/invocations/${id}`).then(
        async (r) => (await r.json()) as Record<string, unknown>,
      );
      expect(got.budget).toEqual({ tokens: 300, costUsd: 1 });
      expect(got.spent).toMatchObject({
        tokens: 300,
        modelCalls: 2,
        byAgent: { yaml_worker: { tokens: 300 } },
      });
      expect(got.pending).toEqual([
        expect.objectContaining({ kind: 'budget', args: expect.objectContaining({ spent: 300, max: 300 }) }),
      ]);

      const bad = await post({ userId: 'u', input: 'go', budget: { tokens: 'many' } });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('budget.tokens');
    });
  });
});
