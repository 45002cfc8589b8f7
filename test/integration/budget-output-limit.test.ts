/**
 * A model call whose reservation does not fit what is left of a budget, but for which at least MIN_OUTPUT_TOKENS
 * output tokens are left, is sent with its output limit lowered to what is left (README "Budgets"): the real
 * OpenAI and Anthropic clients put it on the wire as their own field (`max_completion_tokens`, `max_tokens`), and the
 * stored model event records it. An engine on PostgreSQL; the providers are local scripted wire servers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmAgent, MIN_OUTPUT_TOKENS, type Engine } from '../../src/index.js';
import { anthropicMessage, startAnthropicWire } from '../support/wire/anthropic-wire.js';
import { backends, engineOn } from '../support/services/engines.js';
import { chatCompletion, startOpenAIWire, type ScriptedWireServer } from '../support/wire/openai-wire.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
let openai: ScriptedWireServer;
let anthropic: ScriptedWireServer;
let engine: Engine;

beforeAll(async () => {
  openai = await startOpenAIWire({
    fallback: () => chatCompletion({ text: 'short answer', usage: { prompt: 20, completion: 40 } }),
  });
  anthropic = await startAnthropicWire({
    fallback: () =>
      anthropicMessage({ blocks: [{ text: 'short answer' }], usage: { input: 20, output: 40 } }),
  });
  engine = await engineOn(postgres, {
    apps: [
      // No maxOutputTokens: a first call reserves its input plus 1,024 output tokens.
      { name: 'gpt', agent: new LlmAgent({ name: 'gpt_writer', model: 'openai/gpt-4.1' }) },
      {
        name: 'claude',
        agent: new LlmAgent({ name: 'claude_writer', model: 'anthropic/claude-sonnet-4-5' }),
      },
    ],
    modelEnv: {
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: `${openai.url}/v1`,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: anthropic.url,
    },
  });
});

afterAll(async () => {
  await engine?.close();
  await openai?.close();
  await anthropic?.close();
});

/** Runs `app` under `budget` to its end; returns the output limit its model event records. */
async function runUnder(app: string, budget: Record<string, number>): Promise<unknown> {
  const { invocationId } = await engine.enqueue({ app, userId: 'u', input: 'Write a haiku.', budget });
  const done = await engine.wait(invocationId, { timeoutMs: 60_000 });
  expect(done.status, JSON.stringify(done.pending)).toBe('completed');
  expect(done.spent.modelCalls).toBe(1);
  const recorded: unknown[] = [];
  for await (const e of engine.events(invocationId)) {
    if (e.actions.modelRequest) recorded.push(e.actions.modelRequest.maxOutputTokens);
  }
  expect(recorded).toHaveLength(1);
  return recorded[0];
}

describe('a call lowered to what is left of its budget', () => {
  it('carries what is left of outputTokens on the wire as OpenAI max_completion_tokens', async () => {
    const recorded = await runUnder('gpt', { outputTokens: 120 });
    const body = openai.requests.at(-1)!.body;
    expect(body.max_completion_tokens).toBe(120);
    expect(recorded).toBe(120);
  });

  it('carries what is left of costUsd at the output price on the wire', async () => {
    // gpt-4.1 output costs $8 a million: $0.001 buys 125 tokens, less what the input's estimate costs.
    const recorded = await runUnder('gpt', { costUsd: 0.001 });
    const sent = openai.requests.at(-1)!.body.max_completion_tokens as number;
    expect(sent).toBe(recorded);
    expect(sent).toBeGreaterThanOrEqual(MIN_OUTPUT_TOKENS);
    expect(sent).toBeLessThanOrEqual(125);
    expect(sent).toBeGreaterThan(115);
  });

  it('carries what is left of tokens (after the input) on the wire as Anthropic max_tokens', async () => {
    const recorded = await runUnder('claude', { tokens: 1000 });
    const sent = anthropic.requests.at(-1)!.body.max_tokens as number;
    expect(sent).toBe(recorded);
    // 1,000 less the request's estimated input (a few tokens here): below the 1,024 it would reserve.
    expect(sent).toBeGreaterThan(950);
    expect(sent).toBeLessThan(1000);
  });

  it('sends a call that fits as it is written', async () => {
    const recorded = await runUnder('gpt', { tokens: 100_000 });
    expect(openai.requests.at(-1)!.body).not.toHaveProperty('max_completion_tokens');
    expect(recorded).toBeUndefined();
  });
});
