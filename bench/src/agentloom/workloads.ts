/**
 * W1–W3 on an agentloom engine. Each call is one measured run and returns its figure; the clock runs from
 * before the first `enqueue` to the moment `wait` saw the last invocation completed, so enqueueing (the
 * session, invocation, user event and root node rows) is part of what is measured, as a user would see it.
 */
import type { Engine } from '../../../src/index.js';
import { W1_STEPS, W2_STEPS, W3_BRANCHES } from './apps.js';

async function runToCompletion(engine: Engine, app: string): Promise<void> {
  const { invocationId } = await engine.enqueue({ app, userId: 'bench', input: 'go' });
  const done = await engine.wait(invocationId, { timeoutMs: 600_000 });
  if (done.status !== 'completed') throw new Error(`${app} invocation ${invocationId} ended ${done.status}`);
}

/** W1: one invocation of 20 sequential leaves; ms per leaf step. */
export async function w1(engine: Engine): Promise<number> {
  const started = performance.now();
  await runToCompletion(engine, 'seq20');
  return (performance.now() - started) / W1_STEPS;
}

/** W2: `invocations` concurrent invocations of 5 sequential leaves; leaf steps per second. */
export async function w2(engine: Engine, invocations: number): Promise<number> {
  const started = performance.now();
  await Promise.all(Array.from({ length: invocations }, () => runToCompletion(engine, 'seq5')));
  return (invocations * W2_STEPS) / ((performance.now() - started) / 1000);
}

/** W3: 50 parallel leaves of 200 ms, then a join leaf; wall ms. */
export async function w3(engine: Engine): Promise<number> {
  const started = performance.now();
  await runToCompletion(engine, 'fan50');
  return performance.now() - started;
}

/** Leaf steps of one W3 run (the branches and the join). */
export const W3_STEPS = W3_BRANCHES + 1;

/** One seq5 invocation run alone (for the marginal per-step statement count). */
export async function seq5Alone(engine: Engine): Promise<void> {
  await runToCompletion(engine, 'seq5');
}
